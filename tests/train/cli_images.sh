#!/usr/bin/env bash
# `strata train --image_dir` on class folders of PNG and JPEG files of mixed sizes (written by Debian's python3-pil):
# decoded to --input_shape's channels, resized, augmented (--random_crop --random_flip --random_rotation), trained
# well above chance; then bad input: a corrupt image is named, a rotation outside [0, 180] is refused.
# Skipped (77) without python3-pil and python3-numpy. usage: cli_images.sh STRATA
set -euo pipefail
STRATA=$1
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export OMP_WAIT_POLICY=passive
fail() { echo "FAIL: $*"; exit 1; }
if ! /usr/bin/python3 -c 'import PIL, numpy' 2>/dev/null; then echo "SKIP: needs python3-pil, python3-numpy"; exit 77; fi
/usr/bin/python3 - "$OUT" <<'PY'
import os, sys
import numpy as np
from PIL import Image
rng = np.random.default_rng(0)
for split, n in (('train', 60), ('val', 30)):
    for c, name in enumerate(('red', 'green', 'blue')):
        d = os.path.join(sys.argv[1], split, name)
        os.makedirs(d)
        for i in range(n):
            s = int(rng.integers(20, 40))  # sizes vary: the pipeline resizes
            img = (rng.random((s, s, 3)) * 90).astype(np.uint8)
            img[s // 4:3 * s // 4, s // 4:3 * s // 4, c] = 230
            Image.fromarray(img).save(os.path.join(d, f'{i}.png' if i % 2 else f'{i}.jpg'), quality=95)
PY
"$STRATA" train --image_dir "$OUT/train" --validation_image_dir "$OUT/val" --input_shape 24 24 3 --num_classes 3 \
  --model_name cnn_small_same --batch_size 16 --epochs 4 --seed 0 --verbose 2 --random_crop --random_flip \
  --random_rotation 15 > "$OUT/log" 2>&1 || { cat "$OUT/log"; fail "training on image folders"; }
ACC=$(grep '^test accuracy:' "$OUT/log" | awk '{print $3}')
echo "image folders: test accuracy $ACC"
awk -v a="$ACC" 'BEGIN { exit !(a >= 0.8) }' || { cat "$OUT/log"; fail "accuracy $ACC < 0.8"; }
printf 'not a png' > "$OUT/train/red/broken.png"
if "$STRATA" train --image_dir "$OUT/train" --input_shape 24 24 3 --num_classes 3 --epochs 1 --verbose 0 \
  > "$OUT/bad.log" 2>&1; then fail "a corrupt image was accepted"; fi
grep -qF "broken.png" "$OUT/bad.log" || { cat "$OUT/bad.log"; fail "the corrupt image is not named"; }
rm "$OUT/train/red/broken.png"
if "$STRATA" train --image_dir "$OUT/train" --input_shape 24 24 3 --num_classes 3 --epochs 1 --verbose 0 \
  --random_rotation 200 > "$OUT/bad2.log" 2>&1; then fail "--random_rotation 200 was accepted"; fi
grep -qF -- "--random_rotation must be in [0, 180]" "$OUT/bad2.log" || { cat "$OUT/bad2.log"; fail "rotation message"; }
echo "cli_images: passed"
