#!/bin/bash
# Plants one error at a time in a copy of probe4_proposed.py and reruns
# probe4.py on 300 seeds: each must disagree somewhere, else the probe could
# not have told the proposed card from that error.
#   ./probe4_mutants.sh BINARY
set -euo pipefail
cd "$(dirname "$0")"
binary="$(readlink -f "$1")"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
caught=0; missed=0
while IFS='|' read -r what edit; do
  cp probe4.py "$work/"
  sed "$edit" probe4_proposed.py > "$work/probe4_proposed.py"
  if cmp -s probe4_proposed.py "$work/probe4_proposed.py"; then
    echo "not applied: $what"; missed=$((missed + 1)); continue
  fi
  line="$(python3 "$work/probe4.py" 300 "$binary" | tail -1)"
  if [[ "$line" == *" 0 differ" ]]; then missed=$((missed + 1)); verdict=MISSED; else caught=$((caught + 1)); verdict=caught; fi
  echo "$verdict: $what: $line"
done <<'LIST'
ties by the higher block index|s/sorted(scores)\[:k\]/sorted(scores, key=lambda p: (p[0], -p[1]))[:k]/
max pool backward|s/t\[i:i + self.w\]/t[max(0, i - self.w + 1):i + 1]/
new tokens' counters all 1|s/\[d - i for i in range(d)\]/[1 for i in range(d)]/
SnapKV counters one higher|s/min(k, m - i)/min(k, m - i + 1)/
trigger one block later|s/if n < self.M + B:/if n <= self.M + B:/
block score max instead of sum|s/s += a \/ self.cnt\[B \* i + j\] if self.norm_sum else a/s = max(s, a)/
LIST
echo "probe4 mutants: $caught caught, $missed missed"
[[ $missed -eq 0 ]]
