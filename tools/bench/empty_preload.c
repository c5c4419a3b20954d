/* libpipespin-empty.so: a preload with one symbol and nothing else (no
 * constructor, no interposed names), linked as any shared library is
 * (start files, libc as a dependency). `pipespin bench matrix` runs it as
 * its "empty preload" arm, beside no shim and libpipespin.so: what the
 * loader charges any preload for opening, mapping and relocating a library
 * is the share of a process's start-up that no shim could avoid. (Without
 * the start files and libc it would cost almost nothing, and bound nothing
 * a real preload could reach.) Built beside libpipespin.so, never
 * installed. */
int pipespin_empty_preload = 1;
