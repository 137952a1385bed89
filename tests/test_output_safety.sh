#!/usr/bin/env bash
# tests/test_output_safety.sh -- issue 7, output safety of every command that
# writes (`train --out`, `train --dataset`, and when this build has them
# `inspect|circuit|weights --out DIR`; `eval` writes nothing):
#   - a folder the user may not write (run as `nobody` via setpriv/runuser:
#     root ignores permissions), a path whose parent is missing, a full disk
#     (a 64 KiB tmpfs), `/dev/full`, a FIFO, a folder where a file belongs;
#     each: exit 1, one "headscope CMD: ..." line naming the problem, an
#     existing output at that path byte-identical afterwards, no temp files,
#     /dev/full still a character device and the FIFO still a FIFO;
#   - `train --checkpoint-every 20 --steps 100000` stopped by SIGINT (and
#     SIGTERM) after a checkpoint appeared: exit 1, "interrupted at step N",
#     the checkpoint loads with `headscope eval`, no temp files.
# The nobody case needs root: without it, it prints SKIP (HS_REQUIRE_ROOT_CASES=1,
# set by scripts/test.sh when root, turns that into a failure). The full-disk
# cases fall back to `ulimit -f 0` where a tmpfs cannot be mounted, and say so.
# Run as: bash tests/test_output_safety.sh BUILD_DIR HEADSCOPE_BIN
set -uo pipefail

BUILD_DIR=${1:?usage: test_output_safety.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_output_safety.sh BUILD_DIR HEADSCOPE_BIN}
# World-readable scratch (nobody must reach the binary and the model).
T=$(mktemp -d "${TMPDIR:-/tmp}/hs_outsafe.XXXXXX")
chmod 755 "$T"
MOUNTED=""
cleanup() {
    if [ -n "$MOUNTED" ]; then umount "$MOUNTED" 2>/dev/null || umount -l "$MOUNTED" 2>/dev/null; fi
    rm -rf "$T"
}
trap cleanup EXIT

FAILS=0
SKIPS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
skip() {
    echo "SKIP: $*" >&2
    SKIPS=$((SKIPS + 1))
    if [ "${HS_REQUIRE_ROOT_CASES:-0}" = 1 ]; then fail "required case skipped: $*"; fi
}
ok() { echo "ok: $*"; }

mkdir -p "$T/bin"
cp "$HS" "$T/bin/headscope"
chmod 755 "$T/bin" "$T/bin/headscope"
H="$T/bin/headscope"
SMALL=(--layers 1 --d-model 16 --heads 2 --eval-every 0)

# A small model every case reads (and the reference "existing output").
"$H" train --steps 3 "${SMALL[@]}" --out "$T/model.safetensors" >/dev/null 2>"$T/setup.err" ||
    { cat "$T/setup.err" >&2; echo "FAIL: cannot train the setup model" >&2; exit 1; }
chmod 644 "$T/model.safetensors"
printf 'precious bytes, not a checkpoint\n' >"$T/precious"
chmod 644 "$T/precious"

# expect_user_error NAME CMD REASON_REGEX -- CMD (a subcommand name) ran with
# its output in $T/case.out / $T/case.err and exit code in $RC.
expect_user_error() {
    local name=$1 cmd=$2 reason=$3
    if [ "$RC" -ne 1 ]; then
        fail "$name: exit $RC, expected 1 (stderr: $(tail -3 "$T/case.err"))"
        return 1
    fi
    local n
    n=$(grep -c "^headscope $cmd: " "$T/case.err")
    if [ "$n" -ne 1 ]; then
        fail "$name: $n 'headscope $cmd:' lines on stderr, expected 1: $(cat "$T/case.err")"
        return 1
    fi
    if ! grep "^headscope $cmd: " "$T/case.err" | grep -Eq "$reason"; then
        fail "$name: error line does not say /$reason/: $(grep "^headscope $cmd: " "$T/case.err")"
        return 1
    fi
    echo "   $name -> $(grep "^headscope $cmd: " "$T/case.err")"
    return 0
}

# no_temp_files DIR NAME
no_temp_files() {
    local left
    left=$(find "$1" -name '*.tmp*' 2>/dev/null | head -5)
    if [ -n "$left" ]; then fail "$2: temp files left behind: $left"; return 1; fi
    return 0
}

run() { # run CMD... -> RC, case.out, case.err (bounded: a hang is a failure)
    RC=0
    timeout 120 "$@" >"$T/case.out" 2>"$T/case.err" </dev/null || RC=$?
    if [ "$RC" -eq 124 ]; then echo "(timed out: $*)" >>"$T/case.err"; fi
}

# ---------------------------------------------------------------------------
# Which output-writing subcommands does this build have? (cmd_pending says
# "not available in this build yet".)
DIR_CMDS=()
for c in inspect circuit weights; do
    if "$H" "$c" --help >"$T/help.out" 2>&1 && ! grep -q "not available in this build" "$T/help.out"; then
        DIR_CMDS+=("$c")
    fi
done
echo "folder-writing subcommands in this build: ${DIR_CMDS[*]:-(none yet)}"
SENT="the animal did not cross the street because it was too tired , so the"
dir_cmd_args() { # the arguments of subcommand $1 writing into folder $2
    case "$1" in
        inspect) echo "--model|$T/model.safetensors|--sentence|$SENT|--out|$2" ;;
        *) echo "--model|$T/model.safetensors|--out|$2" ;;
    esac
}
run_dir_cmd() { # run_dir_cmd PREFIX... @@ CMD DIR
    local pre=() c d
    while [ "$1" != "@@" ]; do pre+=("$1"); shift; done
    shift
    c=$1 d=$2
    local IFS='|'
    # shellcheck disable=SC2046
    run "${pre[@]}" "$H" "$c" $(dir_cmd_args "$c" "$d")
}
# Reference outputs: one good run per folder command (names of the files it writes).
for c in "${DIR_CMDS[@]}"; do
    run_dir_cmd @@ "$c" "$T/ref_$c"
    if [ "$RC" -ne 0 ]; then
        fail "$c: a good run into a fresh folder exited $RC: $(tail -3 "$T/case.err")"
        continue
    fi
    [ -n "$(ls -A "$T/ref_$c")" ] || fail "$c: a good run wrote nothing into --out"
    chmod -R a+rX "$T/ref_$c"
done

# ---------------------------------------------------------------------------
# 1. --out whose parent folder is missing
run "$H" train --steps 1 "${SMALL[@]}" --out "$T/missing/sub/m.safetensors"
expect_user_error "train --out, parent missing" train "parent folder does not exist|No such file" &&
    { [ ! -e "$T/missing" ] || fail "train --out, parent missing: created $T/missing"; } &&
    ok "train --out with a missing parent folder"
run "$H" train --steps 1 "${SMALL[@]}" --dataset "$T/missing/d.txt" --out "$T/x.safetensors"
expect_user_error "train --dataset, parent missing" train "parent folder does not exist|No such file" &&
    { [ ! -e "$T/x.safetensors" ] || fail "train --dataset failed but --out was written"; } &&
    ok "train --dataset with a missing parent folder"
for c in "${DIR_CMDS[@]}"; do
    run_dir_cmd @@ "$c" "$T/missing/sub/$c"
    expect_user_error "$c --out, parent missing" "$c" "does not exist|No such file|cannot create" &&
        { [ ! -e "$T/missing" ] || fail "$c --out, parent missing: created $T/missing"; } &&
        ok "$c --out with a missing parent folder"
done

# 2. --out /dev/full: refused, never renamed over
run "$H" train --steps 1 "${SMALL[@]}" --out /dev/full
expect_user_error "train --out /dev/full" train "not a regular file|refus" && ok "train --out /dev/full refused"
[ -c /dev/full ] || fail "/dev/full is no longer a character device"
run "$H" train --steps 1 "${SMALL[@]}" --dataset /dev/full --out "$T/x.safetensors"
expect_user_error "train --dataset /dev/full" train "not a regular file|refus" &&
    ok "train --dataset /dev/full refused"
[ -c /dev/full ] || fail "/dev/full is no longer a character device"
for c in "${DIR_CMDS[@]}"; do
    run_dir_cmd @@ "$c" /dev/full
    expect_user_error "$c --out /dev/full" "$c" "not a (regular file|folder|directory)|refus|exists" &&
        ok "$c --out /dev/full refused"
    [ -c /dev/full ] || fail "/dev/full is no longer a character device (after $c)"
done

# 3. --out a FIFO: refused without blocking, the FIFO still there
mkfifo "$T/fifo"
run "$H" train --steps 1 "${SMALL[@]}" --out "$T/fifo"
expect_user_error "train --out FIFO" train "not a regular file|refus" && ok "train --out FIFO refused"
[ -p "$T/fifo" ] || fail "the FIFO is gone or replaced after train --out FIFO"
run "$H" eval --model "$T/fifo"
expect_user_error "eval --model FIFO" eval "not a regular file" && ok "eval --model FIFO refused (no hang)"
for c in "${DIR_CMDS[@]}"; do
    run_dir_cmd @@ "$c" "$T/fifo"
    expect_user_error "$c --out FIFO" "$c" "not a (regular file|folder|directory)|refus|exists" &&
        ok "$c --out FIFO refused"
    [ -p "$T/fifo" ] || fail "the FIFO is gone or replaced after $c --out FIFO"
done

# 4. train --out a folder
mkdir "$T/adir"
run "$H" train --steps 1 "${SMALL[@]}" --out "$T/adir"
expect_user_error "train --out FOLDER" train "not a regular file|refus" &&
    { [ -d "$T/adir" ] || fail "train --out FOLDER replaced the folder"; } && ok "train --out a folder refused"

# 5. A folder the user may not write: as nobody, on a root-owned 755 folder
#    holding an existing output.
AS_NOBODY=()
if [ "$(id -u)" -eq 0 ]; then
    if command -v setpriv >/dev/null && setpriv --reuid=nobody --regid=nogroup --clear-groups true 2>/dev/null; then
        AS_NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
    elif command -v runuser >/dev/null && runuser -u nobody -- true 2>/dev/null; then
        AS_NOBODY=(runuser -u nobody --)
    fi
fi
if [ ${#AS_NOBODY[@]} -eq 0 ]; then
    skip "unwritable folder: needs root to switch to nobody (root ignores permissions; uid $(id -u))"
else
    mkdir "$T/ro" "$T/rw"
    cp "$T/precious" "$T/ro/m.safetensors"
    cp "$T/precious" "$T/ro/d.txt"
    chmod 755 "$T/ro"
    chmod 644 "$T/ro/m.safetensors" "$T/ro/d.txt"
    chmod 777 "$T/rw"
    # sanity: nobody can run the binary, read the model and write where allowed
    run "${AS_NOBODY[@]}" "$H" train --steps 1 "${SMALL[@]}" --out "$T/rw/ok.safetensors"
    if [ "$RC" -ne 0 ]; then
        fail "nobody cannot train into a writable folder (exit $RC): $(tail -2 "$T/case.err")"
    else
        run "${AS_NOBODY[@]}" "$H" train --steps 1 "${SMALL[@]}" --force --out "$T/ro/m.safetensors"
        expect_user_error "train --out unwritable folder" train "Permission denied" &&
            ok "train --out in a folder nobody may not write"
        cmp -s "$T/precious" "$T/ro/m.safetensors" || fail "unwritable folder: existing --out changed"
        run "${AS_NOBODY[@]}" "$H" train --steps 2 "${SMALL[@]}" --checkpoint-every 1 --force --out "$T/ro/m.safetensors"
        expect_user_error "train --checkpoint-every, unwritable folder" train "Permission denied" &&
            ok "train --checkpoint-every in a folder nobody may not write"
        cmp -s "$T/precious" "$T/ro/m.safetensors" || fail "unwritable folder: existing --out changed (checkpoint)"
        run "${AS_NOBODY[@]}" "$H" train --steps 1 "${SMALL[@]}" --force --dataset "$T/ro/d.txt" --out "$T/rw/x.safetensors"
        expect_user_error "train --dataset unwritable folder" train "Permission denied" &&
            ok "train --dataset in a folder nobody may not write"
        cmp -s "$T/precious" "$T/ro/d.txt" || fail "unwritable folder: existing --dataset file changed"
        run "${AS_NOBODY[@]}" "$H" eval --model "$T/model.safetensors"
        [ "$RC" -eq 0 ] || fail "nobody cannot eval a readable model (exit $RC): $(tail -2 "$T/case.err")"
        for c in "${DIR_CMDS[@]}"; do
            # a new folder inside an unwritable one, and an existing output folder nobody may not write
            run_dir_cmd "${AS_NOBODY[@]}" @@ "$c" "$T/ro/new_$c"
            expect_user_error "$c --out inside an unwritable folder" "$c" "Permission denied" &&
                { [ ! -e "$T/ro/new_$c" ] || fail "$c: created $T/ro/new_$c"; } &&
                ok "$c --out inside a folder nobody may not write"
            cp -a "$T/ref_$c" "$T/ro/$c"
            for f in "$T/ro/$c"/*; do [ -f "$f" ] && printf 'old\n' >"$f"; done
            cp -a "$T/ro/$c" "$T/ro_$c.before"
            chmod 755 "$T/ro/$c"
            run_dir_cmd "${AS_NOBODY[@]}" @@ "$c" "$T/ro/$c"
            expect_user_error "$c --out an unwritable existing folder" "$c" "Permission denied" &&
                ok "$c --out an existing folder nobody may not write"
            diff -r "$T/ro_$c.before" "$T/ro/$c" >/dev/null || fail "$c: files in an unwritable --out changed"
        done
        no_temp_files "$T/ro" "unwritable folder"
    fi
fi

# 6. A full disk: a 64 KiB tmpfs holding an existing output; the new file
#    (a default-size model, ~420 KB) does not fit. Where mounting is not
#    permitted (not root, or a container without CAP_SYS_ADMIN), the same
#    cases run with RLIMIT_FSIZE = 0 (`ulimit -f 0`, SIGXFSZ ignored): every
#    write that would grow a file fails with EFBIG, as on a disk with no room
#    (HS_TEST_NO_TMPFS=1 forces this fallback).
FULL="$T/full"
mkdir "$FULL"
FULLPFX=()
NOSPACE="No space left"
if [ "${HS_TEST_NO_TMPFS:-0}" != 1 ] && [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=64k,mode=755 tmpfs "$FULL" 2>"$T/mount.err"; then
    MOUNTED=$FULL
    echo "full disk: tmpfs of 64 KiB mounted at $FULL"
else
    why="not root"
    [ "$(id -u)" -ne 0 ] || why="mount -t tmpfs not permitted: $(head -1 "$T/mount.err" 2>/dev/null)"
    [ "${HS_TEST_NO_TMPFS:-0}" != 1 ] || why="HS_TEST_NO_TMPFS=1"
    echo "full disk: NOTE no tmpfs ($why); simulating with ulimit -f 0 (EFBIG)"
    # stderr through a pipe to a process without the limit (case.err is a file)
    FULLPFX=(bash -c '{ (trap "" XFSZ; ulimit -f 0; exec "$@") 2>&1 >/dev/null; } | cat >&2
                      exit "${PIPESTATUS[0]}"' full-disk)
    NOSPACE="No space left|File too large"
fi
cp "$T/precious" "$FULL/m.safetensors"
run "${FULLPFX[@]}" "$H" train --steps 1 --eval-every 0 --force --out "$FULL/m.safetensors"
expect_user_error "train --out on a full disk" train "$NOSPACE" && ok "train --out on a full disk"
cmp -s "$T/precious" "$FULL/m.safetensors" || fail "full disk: existing --out changed"
run "${FULLPFX[@]}" "$H" train --steps 2 --eval-every 0 --checkpoint-every 1 --force --out "$FULL/m.safetensors"
expect_user_error "train --checkpoint-every on a full disk" train "$NOSPACE" &&
    ok "train --checkpoint-every on a full disk"
cmp -s "$T/precious" "$FULL/m.safetensors" || fail "full disk: existing --out changed (checkpoint)"
# the dataset text (~130 KB) does not fit either
cp "$T/precious" "$FULL/d.txt"
run "${FULLPFX[@]}" "$H" train --steps 1 "${SMALL[@]}" --force --dataset "$FULL/d.txt" --out "$T/x.safetensors"
expect_user_error "train --dataset on a full disk" train "$NOSPACE" && ok "train --dataset on a full disk"
cmp -s "$T/precious" "$FULL/d.txt" || fail "full disk: existing --dataset file changed"
no_temp_files "$FULL" "full disk"
for c in "${DIR_CMDS[@]}"; do
    rm -rf "${FULL:?}"/*
    # an earlier output of the same names (tiny files), then fill the disk
    mkdir "$FULL/$c"
    for f in $(ls "$T/ref_$c" | head -4); do printf 'old\n' >"$FULL/$c/$f"; done
    cp -a "$FULL/$c" "$T/full_$c.before"
    [ -z "$MOUNTED" ] || dd if=/dev/zero of="$FULL/filler" bs=1k count=1024 2>/dev/null || true
    run "$H" eval --model "$T/model.safetensors" # (reads only: a full disk is no error)
    [ "$RC" -eq 0 ] || fail "eval failed with a full disk elsewhere"
    run_dir_cmd "${FULLPFX[@]}" @@ "$c" "$FULL/$c"
    expect_user_error "$c --out on a full disk" "$c" "$NOSPACE" && ok "$c --out on a full disk"
    diff -r "$T/full_$c.before" "$FULL/$c" >/dev/null || fail "$c: files in --out changed on a full disk"
    no_temp_files "$FULL" "$c on a full disk"
    rm -f "$FULL/filler"
done

# 7. SIGINT / SIGTERM during training keep the last complete checkpoint valid.
for sig in INT TERM; do
    out="$T/sig_$sig.safetensors"
    "$H" train --steps 100000 "${SMALL[@]}" --checkpoint-every 20 --log-every 1000000 --out "$out" \
        >"$T/sig.out" 2>"$T/sig.err" </dev/null &
    pid=$!
    for _ in $(seq 1 600); do [ -s "$out" ] && break; sleep 0.05; done
    if [ ! -s "$out" ]; then
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        fail "SIG$sig: no checkpoint appeared within 30 s"
        continue
    fi
    sleep 0.2
    kill -"$sig" "$pid"
    RC=0
    wait "$pid" || RC=$?
    cp "$T/sig.err" "$T/case.err"
    expect_user_error "train stopped by SIG$sig" train "interrupted at step [0-9]+" &&
        ok "train stopped by SIG$sig: $(grep -o 'interrupted at step [0-9]*' "$T/sig.err")"
    run "$H" eval --model "$out"
    [ "$RC" -eq 0 ] || fail "SIG$sig: the last checkpoint does not load: $(cat "$T/case.err")"
    # the checkpoint says how far it got: a multiple of 20 steps
    done_steps=$(/usr/bin/python3 - "$out" <<'PY' 2>/dev/null
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
print(json.loads(json.loads(b[8:8 + n])['__metadata__']['train'])['steps_done'])
PY
)
    case "$done_steps" in
        ''|*[!0-9]*) fail "SIG$sig: cannot read steps_done from the checkpoint" ;;
        *) [ $((done_steps % 20)) -eq 0 ] && [ "$done_steps" -gt 0 ] ||
               fail "SIG$sig: checkpoint has steps_done $done_steps, not a positive multiple of 20" ;;
    esac
    no_temp_files "$T" "SIG$sig"
done

echo "output safety: $FAILS failed, $SKIPS skipped"
[ "$FAILS" -eq 0 ]
