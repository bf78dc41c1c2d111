#!/usr/bin/env python3
"""Checks a portable build's object files (src/ops/cpu/isa.h): AVX or AVX-512 instructions (VEX/EVEX-encoded, 'v'
mnemonics) appear only in functions of the avx512 variant (namespace ...::avx512::), never in code that runs before
the run-time CPU check, such as a header's inline function or template that the linker may merge across files, and
the avx512 variant does use 512-bit registers.

    check_cpu_variants.py OBJECT...
"""
import re
import subprocess
import sys

FUNC = re.compile(r"^[0-9a-f]+ <(.*)>:$")


def scan(path):
    """Yields (function, mnemonic, operands) of each instruction in the object file."""
    out = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", path], check=True, capture_output=True,
                         text=True).stdout
    func = None
    for line in out.splitlines():
        m = FUNC.match(line)
        if m:
            func = m.group(1)
            continue
        parts = line.split("\t")
        if func is None or len(parts) < 2:
            continue
        words = parts[-1].split(None, 1)
        if words:
            yield func, words[0], words[1] if len(words) > 1 else ""


def main(paths):
    if not paths:
        print("usage: check_cpu_variants.py OBJECT...", file=sys.stderr)
        return 2
    outside = {}
    zmm_in_variant = 0
    for path in paths:
        for func, mnemonic, operands in scan(path):
            if not mnemonic.startswith("v") or mnemonic in ("verr", "verw"):
                continue
            if "::avx512::" in func:
                zmm_in_variant += "%zmm" in operands
            else:
                outside.setdefault((path, func), mnemonic)
    for (path, func), mnemonic in sorted(outside.items())[:20]:
        print(f"FAIL: {path}: {func} uses {mnemonic} outside the avx512 variant")
    if outside:
        print(f"{len(outside)} functions outside namespace avx512 use AVX instructions: a portable build would fault "
              "on CPUs without them")
        return 1
    if zmm_in_variant == 0:
        print("FAIL: no function of the avx512 variant uses a 512-bit register: the variant was not built for AVX-512")
        return 1
    print(f"OK: {len(paths)} objects; AVX instructions only in the avx512 variant ({zmm_in_variant} on zmm registers)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
