#!/usr/bin/env python3
"""Golden runs: a fixed list of pmusim runs whose output is kept in this folder.

    python3 tests/golden/golden.py            # run every case, diff against the stored files
    python3 tests/golden/golden.py --update   # run every case, rewrite the stored files
    python3 tests/golden/golden.py CASE ...   # only the named cases (either mode)

Runs execute in a scratch folder (where the trace cases' input is made), so paths in the
output do not depend on where the repository is. The wall-clock fields (`run.wall_seconds`, `run.references_per_second`, and any key that
ends in `wall_seconds`) are removed before the output is stored or compared; everything else
must be byte-identical (in text output, the wall-clock part of the "simulated ... references
in S s (R references/s)" line is replaced by a fixed phrase). Set PMUSIM to use another binary (default: target/release/pmusim,
built with `cargo build --release` first). Exit 0 when every case matches, 1 otherwise.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DOCS = os.path.join(ROOT, "docs", "numachine")

# (name, arguments, output kind: "json" parses and strips wall fields, "text" compares as is)
CASES = [
    # every kernel on every preset
    ("fft-numachine-16", ["run", "fft", "-s", "test", "-p", "16", "--json"], "json"),
    ("lu-numachine-16", ["run", "lu", "-s", "test", "-p", "16", "--json"], "json"),
    ("ocean-numachine-16", ["run", "ocean", "-s", "test", "-p", "16", "--json"], "json"),
    ("radix-numachine-16", ["run", "radix", "-s", "test", "-p", "16", "--json"], "json"),
    ("fft-flash-16", ["run", "fft", "-m", "flash", "-s", "test", "-p", "16", "--json"], "json"),
    ("lu-flash-16", ["run", "lu", "-m", "flash", "-s", "test", "-p", "16", "--json"], "json"),
    ("ocean-flash-4", ["run", "ocean", "-m", "flash", "-s", "test", "-p", "4", "--json"], "json"),
    ("radix-flash-16", ["run", "radix", "-m", "flash", "-s", "test", "-p", "16", "--json"], "json"),
    ("fft-ideal-4", ["run", "fft", "-m", "ideal", "-s", "test", "-p", "4", "--json"], "json"),
    ("lu-ideal-1", ["run", "lu", "-m", "ideal", "-s", "test", "-p", "1", "--json"], "json"),
    ("ocean-ideal-16", ["run", "ocean", "-m", "ideal", "-s", "test", "-p", "16", "--json"], "json"),
    ("radix-ideal-8", ["run", "radix", "-m", "ideal", "-s", "test", "-p", "8", "--json"], "json"),
    ("fft-numachine-64", ["run", "fft", "-s", "test", "-p", "64", "--json"], "json"),
    ("fft-cmp-8", ["run", "fft", "-m", "cmp", "-s", "test", "--json"], "json"),
    ("radix-cmp-8x2-text", ["run", "radix", "-m", "cmp", "-s", "test", "--threads-per-core", "2"], "text"),
    # every micro-kernel
    ("false-sharing-numachine-16", ["run", "false-sharing", "-s", "test", "-p", "16", "--json"], "json"),
    ("producer-consumer-flash-8", ["run", "producer-consumer", "-m", "flash", "-s", "test", "-p", "8", "--json"], "json"),
    ("lock-numachine-16", ["run", "lock", "-s", "test", "-p", "16", "--json"], "json"),
    ("migratory-ideal-8", ["run", "migratory", "-m", "ideal", "-s", "test", "-p", "8", "--json"], "json"),
    ("stream-numachine-4", ["run", "stream", "-s", "test", "-p", "4", "--json"], "json"),
    ("pointer-chase-flash-16", ["run", "pointer-chase", "-m", "flash", "-s", "test", "-p", "16", "--json"], "json"),
    # the R10000-like core: issue width, branch predictor (its table indexed by source line,
    # not by host address: task det19), four MSHRs, the active list
    ("ocean-flash-r10k-16", ["run", "ocean", "-m", "flash-r10k", "-s", "test", "-p", "16", "--json"], "json"),
    ("informing-numachine-4", ["run", "informing", "-s", "test", "-p", "4", "--json"], "json"),
    ("hits-ideal-4", ["run", "hits", "-m", "ideal", "-s", "test", "-p", "4", "--json"], "json"),
    ("fft-numachine-tlb", ["run", "fft", "-s", "test", "-p", "4", "--tlb", "--json"], "json"),
    ("fft-seed7", ["run", "fft", "-s", "test", "-p", "16", "--seed", "7", "--json"], "json"),
    # every monitor configuration
    ("mon-builtin-fft", ["run", "fft", "-s", "test", "-p", "16", "--monitor", "numachine", "--json"], "json"),
    ("mon-builtin-lock", ["run", "lock", "-s", "test", "-p", "16", "--monitor", "numachine", "--json"], "json"),
    ("mon-counters-sram", ["run", "false-sharing", "-s", "test", "-p", "16", "--monitor", "@docs/counters-sram.toml", "--json"], "json"),
    ("mon-disabled", ["run", "stream", "-s", "test", "-p", "4", "--monitor", "@docs/disabled.toml", "--json"], "json"),
    ("mon-cache-profile", ["run", "fft", "-s", "test", "-p", "16", "--monitor", "@docs/cache-profile.toml", "--json"], "json"),
    ("mon-locality", ["run", "pointer-chase", "-s", "test", "-p", "16", "--monitor", "@docs/locality.toml", "--json"], "json"),
    ("mon-phase-timing", ["run", "migratory", "-s", "test", "-p", "16", "--monitor", "@docs/phase-timing.toml", "--json"], "json"),
    ("mon-builtin-flash", ["run", "producer-consumer", "-m", "flash", "-s", "test", "-p", "16", "--monitor", "numachine", "--json"], "json"),
    ("mon-builtin-text", ["run", "fft", "-s", "test", "-p", "16", "--monitor", "numachine"], "text"),
    # FlashPoint protocols
    ("fp-noproc-fft", ["run", "fft", "-m", "flash", "-s", "test", "-p", "16", "--protocol", "fp-noproc", "--json"], "json"),
    ("fp-proc-ocean", ["run", "ocean", "-m", "flash", "-s", "test", "-p", "16", "--protocol", "fp-proc", "--json"], "json"),
    ("fp-report-json", ["report", "fft", "-s", "test", "-p", "16", "--format", "json"], "json"),
    ("fp-report-text", ["report", "radix", "-s", "test", "-p", "16", "--by", "data,proc,proc-data"], "text"),
    ("fp-report-nofence", ["report", "lu", "-s", "test", "-p", "16", "--no-fence", "--format", "csv"], "text"),
    # a trace replay (a lackey text made by this script, converted, then replayed)
    ("trace-lackey-numachine", ["run", "trace:@lackey", "-p", "4", "--json"], "json"),
    ("trace-pmt-flash", ["run", "trace:@pmt", "-m", "flash", "-p", "4", "--json"], "json"),
    # the study and the protocol tester
    ("study-flashpoint-test", ["study", "flashpoint", "--size", "test", "--procs", "16", "--json"], "json"),
    ("tester-numachine", ["test-protocol", "--machine", "numachine", "--procs", "16", "--ops", "100000", "--seed", "1"], "text"),
    ("tester-flash", ["test-protocol", "--machine", "flash", "--procs", "16", "--ops", "100000", "--seed", "2"], "text"),
    ("tester-ideal", ["test-protocol", "--machine", "ideal", "--procs", "8", "--ops", "100000", "--seed", "3"], "text"),
    ("tester-cmp", ["test-protocol", "--machine", "cmp", "--ops", "100000", "--seed", "4"], "text"),
    # the default text report
    ("text-default-fft", ["run", "fft", "-s", "test", "-p", "16"], "text"),
    # the presets, monitors and run kinds added after the platform work (issues 13-16)
    ("fft-bgq-upc-64t", ["run", "fft", "-m", "bgq", "-s", "test", "--threads", "64", "--monitor", "upc", "--json"], "json"),
    ("fft-power2-mon", ["run", "fft", "-m", "power2", "-s", "test", "--monitor", "power2", "--json"], "json"),
    ("multiprog-power2-os", ["run", "fft+radix+lu", "-m", "power2-os", "-s", "test", "--procs", "1", "--json"], "json"),
    ("lu-elan-addie", ["run", "lu", "-m", "elan", "-s", "test", "--monitor", "addie", "--json"], "json"),
    ("radix-elan-memctl", ["run", "radix", "-m", "elan", "-s", "test", "--monitor", "memctl", "--json"], "json"),
    ("lu-numachine-memctl", ["run", "lu", "-s", "test", "-p", "4", "--monitor", "memctl", "--json"], "json"),
    ("false-sharing-cmp-c2c", ["run", "false-sharing", "-m", "cmp", "-s", "test", "--monitor", "c2c", "--json"], "json"),
    ("fft-numachine-threads8", ["run", "fft", "-s", "test", "--threads", "8", "--json"], "json"),
    ("producer-consumer-threads6", ["run", "producer-consumer", "-s", "test", "-p", "4", "--threads", "6", "--json"], "json"),
    ("lu-cmp-8x4-t32", ["run", "lu", "-m", "cmp", "-s", "test", "--threads-per-core", "4", "--threads", "32", "--json"], "json"),
    ("tester-bgq", ["test-protocol", "--machine", "bgq", "--ops", "100000", "--seed", "5"], "text"),
]


def lackey_text():
    """A deterministic lackey log: one thread sweeping a 96 KiB array twice and a small
    table it keeps re-reading, with instruction lines between the data references."""
    out = ["==1== Lackey, an example Valgrind tool", "==1== Command: ./golden"]
    base, table = 0x4A000000, 0x4B000000
    for rep in range(2):
        for i in range(0, 96 * 1024, 8):
            out.append("I  0040%04x,4" % (i % 0x1000))
            out.append(" L %08x,8" % (base + i))
            if i % 64 == 0:
                out.append(" S %08x,8" % (table + (i // 64 % 32) * 8))
            if i % 256 == 0:
                out.append(" M %08x,4" % (table + 512))
    out.append("==1== ")
    return "\n".join(out) + "\n"


WALL = ("wall_seconds", "references_per_second")
# The text report's wall-clock line: "simulated N cycles, M references in 0.04 s (19.6 M ...)".
WALL_TESTER = re.compile(r"(simulated) cycles \([0-9.]+ s\)")
WALL_TEXT = re.compile(r"(references) in [0-9.]+ s \([0-9.]+ [kMG]? ?references/s\)")


def strip_wall(v):
    if isinstance(v, dict):
        return {k: strip_wall(x) for k, x in v.items() if not k.endswith(WALL)}
    if isinstance(v, list):
        return [strip_wall(x) for x in v]
    return v


def run_case(binary, name, args, kind, scratch):
    args = [a.replace("@docs/", DOCS + "/")
             .replace("trace:@lackey", "trace:golden.lackey")
             .replace("trace:@pmt", "trace:golden.pmt")
            for a in args]
    p = subprocess.run([binary] + args, capture_output=True, text=True, cwd=scratch)
    text = p.stdout
    if kind == "json":
        try:
            text = json.dumps(strip_wall(json.loads(p.stdout)), indent=1, sort_keys=False) + "\n"
        except json.JSONDecodeError:
            pass
    else:
        text = WALL_TEXT.sub(r"\1 (wall-clock figures removed)", text)
        text = WALL_TESTER.sub(r"\1 cycles (wall-clock time removed)", text)
    if p.returncode != 0:
        text += "stderr:\n" + p.stderr
    return "exit %d\n%s" % (p.returncode, text)


def main():
    update = "--update" in sys.argv
    only = [a for a in sys.argv[1:] if not a.startswith("--")]
    binary = os.environ.get("PMUSIM", os.path.join(ROOT, "target", "release", "pmusim"))
    if not os.path.exists(binary):
        sys.exit("no binary at %s: run `cargo build --release` first (or set PMUSIM)" % binary)
    unknown = [o for o in only if o not in [c[0] for c in CASES]]
    if unknown:
        sys.exit("unknown case(s): %s" % ", ".join(unknown))
    bad = 0
    with tempfile.TemporaryDirectory() as scratch:
        with open(os.path.join(scratch, "golden.lackey"), "w") as f:
            f.write(lackey_text())
        subprocess.run([binary, "trace", "convert", os.path.join(scratch, "golden.lackey"),
                        "-o", os.path.join(scratch, "golden.pmt")], check=True,
                       capture_output=True)
        for name, args, kind in CASES:
            if only and name not in only:
                continue
            got = run_case(binary, name, args, kind, scratch)
            path = os.path.join(HERE, name + (".json" if kind == "json" else ".txt"))
            if update:
                with open(path, "w") as f:
                    f.write(got)
                print("wrote  ", name)
                continue
            want = open(path).read() if os.path.exists(path) else None
            if want == got:
                print("same   ", name)
            else:
                bad += 1
                print("DIFFERS", name)
                if want is not None:
                    w, g = want.splitlines(), got.splitlines()
                    import difflib
                    for line in list(difflib.unified_diff(w, g, "stored", "now", lineterm="", n=1))[:40]:
                        print("   ", line)
    if not update:
        print("%d case(s) differ" % bad if bad else "all cases identical")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
