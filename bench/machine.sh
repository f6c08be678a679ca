# Sourced by the bench scripts: prints what a figure was measured on, before any figure. The
# machines differ from run to run (Xeon or EPYC, with or without AVX-512 and AMX), so a ratio
# is only read next to these lines.
print_machine() {
  echo "== machine"
  uptime
  grep -m1 'model name' /proc/cpuinfo | sed 's/^model name[[:space:]]*: /cpu: /'
  echo "cores: $(nproc)"
  echo "isa: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' |
    grep -E '^(avx2|fma|avx512.*|amx.*|.*vnni.*)$' | sort -u | tr '\n' ' ')"
}
