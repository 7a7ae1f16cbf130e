#!/usr/bin/env bash
# The all-in-one's scale curve, to size a site: the sustainable rate, the p99 from acceptance to
# MQTT and the peak memory for 1k, 10k, 100k and 1M devices (1,000 zones) and for 1k, 10k and
# 100k zones (10,000 devices), each a pipeline.sh run at full speed with every zone event
# forwarded to MQTT (the input pushes back, so the sent rate is the sustainable one).
# Writes a table (TSV) and its plot (SVG):
#   services/loadgen/scripts/scale.sh [seconds per run, default 20] [output folder, default docs]
#   BIN=/path/to/release/binaries ...   # another build's binaries, as for pipeline.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
secs=${1:-20}; out=${2:-$here/../../../docs}
tsv=$out/scale.tsv
printf 'devices\tzones\tsustainable_per_s\tevaluated_per_s\tevents_to_mqtt\tp99_ms\tpeak_mb\n' > "$tsv"
run() { # devices zones
  local report
  report=$(MQTT=1 MODE=all-in-one DEVICES=$1 ZONES=$2 SENDERS=3 DRAIN=10 "$here/pipeline.sh" 0 "$secs" http 2>&1) || {
    echo "$report" >&2; echo "scale: the run with $1 devices and $2 zones failed" >&2; exit 1; }
  local sent evaluated events p99 peak
  sent=$(sed -n 's/^sent .*= \([0-9]*\) positions\/s.*/\1/p' <<<"$report")
  evaluated=$(sed -n 's/^evaluated .*= \([0-9]*\) positions\/s.*/\1/p' <<<"$report")
  events=$(sed -n 's/^mqtt *\([0-9]*\) messages.*/\1/p' <<<"$report")
  p99=$(sed -n 's/^mqtt .* p99 \([0-9.]*\) .*/\1/p' <<<"$report")
  peak=$(sed -n 's/^peak memory .*: \([0-9]*\) MB.*/\1/p' <<<"$report" | head -1)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$sent" "$evaluated" "$events" "${p99:-}" "$peak" | tee -a "$tsv"
}
for devices in 1000 10000 100000 1000000; do run "$devices" 1000; done
for zones in 10000 100000; do run 10000 "$zones"; done
python3 "$here/scale_plot.py" "$tsv" "$out/scale.svg"
echo "scale: $tsv and $out/scale.svg"
