# Sourced by the checks that read the library's machine code
# (check_tailcalls.sh, check_spin_depth.sh).
#   machine_code_load OBJDUMP LIB [BUILD_TYPE]: exits 77 (skipped) unless
#     the build is optimized (-O0 inlines nothing and makes no tail call),
#     else sets `code` to the library's disassembly (demangled).
#   machine_code_body NAME: the instructions of function NAME: a C name
#     (`read`), or a demangled C++ name up to its `(`
#     (`pipespin::continue_read(`); empty if there is none.
machine_code_load() {
  local objdump=$1 lib=$2 build_type=${3:-Release}
  case $build_type in
    Release|RelWithDebInfo|MinSizeRel) ;;
    *) echo "SKIP: a $build_type build is not optimized; run in a Release build" >&2
       exit 77 ;;
  esac
  code=$("$objdump" -d --no-show-raw-insn -C "$lib") || { echo "FAIL: $objdump -d $lib" >&2; exit 1; }
}

machine_code_body() {
  if [[ $1 == *"("* ]]; then  # a demangled C++ name: its symbol line contains it
    awk -v f="<$1" 'index($0, f) && /:$/ {on = 1; next} on && NF == 0 {exit} on' <<<"$code"
  else
    awk -v f="<$1>:" '$2 == f {on = 1; next} on && NF == 0 {exit} on' <<<"$code"
  fi
}
