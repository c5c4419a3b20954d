/* libpipespin-empty.so: a preload with one symbol and nothing else (no
 * constructor, no interposed names). `pipespin bench matrix` runs it as its
 * "empty preload" arm, beside no shim and libpipespin.so: what the loader
 * charges any preload for opening, mapping and relocating a library is the
 * share of a process's start-up that no shim could avoid. Built beside
 * libpipespin.so, never installed. */
int pipespin_empty_preload = 1;
