#!/bin/sh
# The HTML report in a real browser (issue 17 item 6): renders `run fft --html` in headless
# Chromium (Debian's `chromium`), saves a screenshot, and checks that the page's script ran
# and sorted a table: the DOM after load must still hold every processor row, and a click
# on the "instr" header (simulated by the page's own handler) must order the rows by value.
# Usage: sh tests/browser/check.sh [OUT_DIR]   (needs `apt-get install chromium`)
set -eu
OUT=${1:-target/browser-check}
mkdir -p "$OUT"
BIN=${PMUSIM:-target/release/pmusim}
[ -x "$BIN" ] || cargo build --release
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || { echo "chromium not found: apt-get install chromium" >&2; exit 2; }
"$BIN" run fft -s test -p 16 --monitor numachine --html "$OUT/report.html" > /dev/null
# Sort by the processors table's second column twice (descending), then dump the DOM.
sed 's#</body>#<script>var th=document.querySelector("\#t-processors thead th:nth-child(2)");th.click();th.click();</script></body>#' \
  "$OUT/report.html" > "$OUT/sorted.html"
FLAGS="--headless --no-sandbox --disable-gpu --hide-scrollbars"
"$CHROMIUM" $FLAGS --window-size=1280,2400 --screenshot="$OUT/report.png" "file://$(realpath "$OUT/report.html")" 2>/dev/null
"$CHROMIUM" $FLAGS --dump-dom "file://$(realpath "$OUT/sorted.html")" > "$OUT/sorted-dom.html" 2>/dev/null
python3 - "$OUT" <<'PY'
import re, sys
out = sys.argv[1]
png = open(f"{out}/report.png", "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20000, "screenshot missing or blank"
dom = open(f"{out}/sorted-dom.html").read()
t = dom[dom.index('id="t-processors"'):]
body = t[t.index("<tbody>"):t.index("</tbody>")]
vals = [float(v) for v in re.findall(r'<tr><td>[^<]*</td><td class="num" data-v="([^"]+)"', body)]
assert len(vals) == 16, f"16 processor rows after sorting, found {len(vals)}"
assert vals == sorted(vals, reverse=True), f"rows sorted by instructions, descending: {vals}"
print(f"browser check passed: {out}/report.png ({len(png)} bytes), 16 rows sorted by the page's script")
PY
