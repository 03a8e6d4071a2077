#!/bin/sh
# gpu-triage node collector (bundle format 1, node part).
#
# Runs as root on one Kubernetes node and writes a tar stream to stdout holding
# the files of nodes/<node-name>/ (paths relative to that directory) plus
# steps.tsv, one line per attempted step. collect.py turns steps.tsv into
# manifest items and never puts steps.tsv itself into the bundle.
#
# It is read-only: it only runs commands that print state and copies files.
# It works fed on stdin (`sh -s`, as the collector does through kubectl debug,
# ssh or locally) or as a file (`sh node.sh`).
#
# Environment (all optional):
#   GPU_TRIAGE_HOST_ROOT       directory standing in for the host's /        (default /)
#   GPU_TRIAGE_SINCE           journal window, e.g. 168h, 7d                  (default 168h)
#   GPU_TRIAGE_MAX_FILE_BYTES  cap per collected file; longer output is cut (default 52428800)
#   GPU_TRIAGE_STEP_TIMEOUT    seconds per command, when timeout(1) exists   (default 60)
#
# steps.tsv columns, tab-separated:
#   path exit_code started_at duration_ms bytes truncated(0|1) error command
# In the error and command fields a backslash, tab, newline, carriage return and
# the unit separator (octal 037) are written as \\ \t \n \r \u; the command
# field holds the escaped arguments joined by one raw unit separator.
#
# Progress and errors go to stderr. Every command gets stdin from /dev/null so
# that none of them can eat the rest of this script when it is read from stdin.

set -u
umask 077

DMESG_PATTERN='NVRM|Xid|nvidia|nouveau|NVSwitch|AER|fallen off the bus|Lockdown|module verification'
SYSTEMD_PROPS='Restart,RestartUSec,NRestarts,ActiveState,SubState,ExecMainPID,ExecMainStartTimestamp'
TAB=$(printf '\t')
CR=$(printf '\r')
US=$(printf '\037')
NL='
'

log() { printf 'gpu-triage node: %s\n' "$*" >&2; }
die() { log "$*"; exit 2; }

ROOT=${GPU_TRIAGE_HOST_ROOT:-/}
SINCE=${GPU_TRIAGE_SINCE:-168h}
MAX_BYTES=${GPU_TRIAGE_MAX_FILE_BYTES:-52428800}
STEP_TIMEOUT=${GPU_TRIAGE_STEP_TIMEOUT:-60}

case $ROOT in /*) ;; *) die "GPU_TRIAGE_HOST_ROOT must be an absolute path" ;; esac
case $SINCE in '' | *[!0-9smhdw]* | [!0-9]*) die "GPU_TRIAGE_SINCE must look like 168h" ;; esac
case $MAX_BYTES in '' | *[!0-9]*) die "GPU_TRIAGE_MAX_FILE_BYTES must be a number" ;; esac
case $STEP_TIMEOUT in '' | *[!0-9]*) die "GPU_TRIAGE_STEP_TIMEOUT must be a number" ;; esac

# R is the prefix put before host paths: empty for the real root.
R=${ROOT%/}
PATH=$PATH:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
LC_ALL=C
export PATH LC_ALL

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpu-triage.XXXXXX" 2>/dev/null) || {
    tmp=${TMPDIR:-/tmp}/gpu-triage.$$
    mkdir -m 700 "$tmp" || die "cannot create a temporary directory"
}
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP
out=$tmp/out
work=$tmp/work
mkdir -p "$out" "$work" || die "cannot create $tmp"
STEPS=$out/steps.tsv
: >"$STEPS"

# Optional helpers, detected once.
TIMEOUT_OK=0
if command -v timeout >/dev/null 2>&1 && timeout 5 true </dev/null >/dev/null 2>&1; then
    TIMEOUT_OK=1
fi
HEAD_C_OK=0
if [ "$(printf 'abc' | head -c 2 2>/dev/null)" = ab ]; then
    HEAD_C_OK=1
fi

now_ms() {
    n_t=$(date +%s%N 2>/dev/null)
    case $n_t in
    '' | *[!0-9]*) n_t=$(date +%s)000 ;;
    *) n_t=${n_t%??????} ;;
    esac
    printf '%s' "$n_t"
}

now_iso() { date -u +%Y-%m-%dT%H:%M:%SZ; }

# esc TEXT: print TEXT escaped for one steps.tsv field.
esc() {
    case $1 in
    *\\* | *"$TAB"* | *"$CR"* | *"$US"* | *"$NL"*)
        printf '%s' "$1" | tr -d '\000' |
            sed -e 's/\\/\\\\/g' -e "s/$TAB/\\\\t/g" -e "s/$CR/\\\\r/g" -e "s/$US/\\\\u/g" |
            awk 'NR > 1 { printf "%s", "\\n" } { printf "%s", $0 }'
        ;;
    *) printf '%s' "$1" ;;
    esac
}

# record PATH RC STARTED DURATION_MS BYTES TRUNCATED ERROR CMD...
record() {
    r_line="$1$TAB$2$TAB$3$TAB$4$TAB$5$TAB$6$TAB$(esc "$7")$TAB"
    shift 7
    r_first=1
    for r_arg in "$@"; do
        if [ "$r_first" = 1 ]; then r_first=0; else r_line=$r_line$US; fi
        r_line=$r_line$(esc "$r_arg")
    done
    printf '%s\n' "$r_line" >>"$STEPS"
}

# cut_to_cap FILE: shorten FILE to MAX_BYTES; sets truncated=1 when it did.
cut_to_cap() {
    c_size=$(wc -c <"$1" | tr -d ' ')
    [ "$c_size" -gt "$MAX_BYTES" ] || return 0
    if [ "$HEAD_C_OK" = 1 ]; then
        head -c "$MAX_BYTES" "$1" >"$work/cut"
    elif [ $((MAX_BYTES % 4096)) -eq 0 ]; then
        dd if="$1" of="$work/cut" bs=4096 count=$((MAX_BYTES / 4096)) 2>/dev/null
    else
        dd if="$1" of="$work/cut" bs=1 count="$MAX_BYTES" 2>/dev/null
    fi
    mv "$work/cut" "$1"
    truncated=1
}

limit_stream() {
    if [ "$HEAD_C_OK" = 1 ]; then head -c $((MAX_BYTES + 1)); else cat; fi
}

# exec_capture FILE CMD...: append CMD's stdout to FILE (bounded), its stderr
# to $work/err. Sets rc and truncated.
exec_capture() {
    e_dest=$1
    shift
    : >"$work/err"
    truncated=0
    if ! command -v "$1" >/dev/null 2>&1; then
        rc=127
        printf '%s: command not found\n' "$1" >"$work/err"
        return 0
    fi
    rm -f "$work/rc"
    {
        if [ "$TIMEOUT_OK" = 1 ]; then
            timeout "$STEP_TIMEOUT" "$@"
        else
            "$@"
        fi </dev/null 2>"$work/err"
        echo "$?" >"$work/rc"
    } | limit_stream >>"$e_dest"
    rc=$(cat "$work/rc" 2>/dev/null)
    [ -n "$rc" ] || rc=1
    cut_to_cap "$e_dest"
    # We closed the pipe ourselves when the output hit the cap.
    if [ "$truncated" = 1 ] && [ "$rc" -ge 128 ]; then rc=0; fi
}

# finish_step PATH STARTED T0 CMD...: judge rc (0, or any code listed in
# $ok_rcs), drop an empty file of a failed step, write the steps.tsv line.
ok_rcs=0
finish_step() {
    f_path=$1 f_started=$2 f_t0=$3
    shift 3
    f_dest=$out/$f_path
    f_err=''
    f_ok=0
    for f_code in $ok_rcs; do
        if [ "$rc" = "$f_code" ]; then f_ok=1; fi
    done
    ok_rcs=0
    if [ "$f_ok" = 1 ]; then
        rc=0
    elif [ "$rc" = 124 ] && [ "$TIMEOUT_OK" = 1 ]; then
        f_err="timed out after ${STEP_TIMEOUT}s"
    else
        f_err=$(dd if="$work/err" bs=2000 count=1 2>/dev/null)
        [ -n "$f_err" ] || f_err="exit status $rc"
    fi
    f_bytes=0
    if [ -f "$f_dest" ]; then
        f_bytes=$(wc -c <"$f_dest" | tr -d ' ')
        if [ "$f_bytes" = 0 ] && [ -n "$f_err" ]; then rm -f "$f_dest"; fi
    fi
    f_dur=$(($(now_ms) - f_t0))
    [ "$f_dur" -ge 0 ] || f_dur=0
    record "$f_path" "$rc" "$f_started" "$f_dur" "$f_bytes" "$truncated" "$f_err" "$@"
    if [ -n "$f_err" ]; then
        log "$f_path: failed: $(printf '%s' "$f_err" | head -n 1)"
    else
        log "$f_path: ok ($f_bytes bytes)"
    fi
}

# run_step PATH CMD...: one bundle file from one command's stdout.
run_step() {
    s_path=$1
    shift
    mkdir -p "$(dirname "$out/$s_path")"
    : >"$out/$s_path"
    s_t0=$(now_ms)
    s_started=$(now_iso)
    exec_capture "$out/$s_path" "$@"
    finish_step "$s_path" "$s_started" "$s_t0" "$@"
}

# fail_step PATH ERROR CMD...: record a step that could not even start.
fail_step() {
    p_path=$1 p_err=$2
    shift 2
    record "$p_path" 1 "$(now_iso)" 0 0 0 "$p_err" "$@"
    log "$p_path: failed: $p_err"
}

# safe_rel REL: true when REL is a relative path of plain name segments.
safe_rel() {
    case $1 in
    '' | /* | *[!A-Za-z0-9._/-]*) return 1 ;;
    esac
    case /$1/ in
    */../* | */./* | *//*) return 1 ;;
    esac
    return 0
}

collect_containerd() {
    run_step containerd/version.txt containerd --version
    if [ -n "$R" ] && [ -f "$R/etc/containerd/config.toml" ]; then
        run_step containerd/config-dump.toml containerd --config "$R/etc/containerd/config.toml" config dump
    else
        run_step containerd/config-dump.toml containerd config dump
    fi
    run_step containerd/files/etc/containerd/config.toml cat "$R/etc/containerd/config.toml"
    [ -d "$R/etc/containerd/conf.d" ] || return 0
    find "$R/etc/containerd/conf.d" \( -type f -o -type l \) 2>/dev/null | sort |
        while IFS= read -r cd_file; do
            [ -f "$cd_file" ] || continue
            cd_rel=${cd_file#"$R"/}
            if safe_rel "$cd_rel"; then
                run_step "containerd/files/$cd_rel" cat "$cd_file"
            else
                fail_step containerd/files "refused an unsafe file name: $cd_rel" cat "$cd_file"
            fi
        done
}

unit_exists() {
    if command -v systemctl >/dev/null 2>&1; then
        case $(systemctl show -p LoadState "$1" </dev/null 2>/dev/null) in
        *LoadState=loaded*) return 0 ;;
        esac
    fi
    for u_dir in /etc/systemd/system /lib/systemd/system /usr/lib/systemd/system; do
        if [ -f "$R$u_dir/$1.service" ]; then return 0; fi
    done
    return 1
}

collect_journals() {
    for j_unit in containerd kubelet; do
        run_step "journal/$j_unit.jsonl" journalctl -u "$j_unit" -o json --since "-$SINCE"
    done
    if unit_exists nvidia-fabricmanager; then
        run_step journal/nvidia-fabricmanager.jsonl journalctl -u nvidia-fabricmanager -o json --since "-$SINCE"
    else
        log "journal/nvidia-fabricmanager.jsonl: skipped, no such unit"
    fi
}

collect_dmesg() {
    d_t0=$(now_ms)
    d_started=$(now_iso)
    : >"$work/dmesg.raw"
    exec_capture "$work/dmesg.raw" dmesg --time-format iso
    set -- dmesg --time-format iso
    if [ "$rc" != 0 ] && command -v dmesg >/dev/null 2>&1; then
        log "dmesg --time-format iso failed, trying plain dmesg"
        : >"$work/dmesg.raw"
        exec_capture "$work/dmesg.raw" dmesg
        set -- dmesg
    fi
    if [ "$rc" = 0 ]; then
        grep -iE "$DMESG_PATTERN" "$work/dmesg.raw" >"$out/dmesg.txt"
    fi
    finish_step dmesg.txt "$d_started" "$d_t0" "$@"
}

collect_nvidia_smi() {
    if command -v nvidia-smi >/dev/null 2>&1; then
        run_step nvidia-smi.xml nvidia-smi -q -x
    elif [ -x "$R/run/nvidia/driver/usr/bin/nvidia-smi" ]; then
        # Driver container: its root file system is mounted at /run/nvidia/driver.
        run_step nvidia-smi.xml chroot "$R/run/nvidia/driver" nvidia-smi -q -x
    else
        fail_step nvidia-smi.xml "nvidia-smi not found on the host nor under /run/nvidia/driver" nvidia-smi -q -x
    fi
}

collect_nvidia_ctk() {
    k_t0=$(now_ms)
    k_started=$(now_iso)
    mkdir -p "$out/host"
    if k_path=$(command -v nvidia-ctk 2>/dev/null); then
        printf '%s\n' "$k_path" >"$out/host/nvidia-ctk.txt"
        exec_capture "$out/host/nvidia-ctk.txt" nvidia-ctk --version
    else
        rc=127
        truncated=0
        printf 'nvidia-ctk: not found in PATH\n' >"$work/err"
    fi
    finish_step host/nvidia-ctk.txt "$k_started" "$k_t0" sh -c 'command -v nvidia-ctk && nvidia-ctk --version'
}

collect_unattended_upgrades() {
    a_t0=$(now_ms)
    a_started=$(now_iso)
    a_dest=$out/host/unattended-upgrades.txt
    mkdir -p "$out/host"
    : >"$a_dest"
    set -- cat
    rc=0
    truncated=0
    for a_file in /etc/apt/apt.conf.d/20auto-upgrades /etc/apt/apt.conf.d/50unattended-upgrades; do
        [ -f "$R$a_file" ] || continue
        printf '==> %s <==\n' "$a_file" >>"$a_dest"
        exec_capture "$a_dest" cat "$R$a_file"
        set -- "$@" "$R$a_file"
        [ "$rc" = 0 ] || break
    done
    finish_step host/unattended-upgrades.txt "$a_started" "$a_t0" "$@"
}

collect_host() {
    run_step host/uname.txt uname -a
    run_step host/os-release cat "$R/etc/os-release"
    run_step host/cmdline cat "$R/proc/cmdline"
    ok_rcs='0 1'
    run_step host/modules.txt grep -E '^(nvidia[a-z_]*|nouveau) ' "$R/proc/modules"
    run_step host/secureboot.txt mokutil --sb-state
    collect_nvidia_ctk
    collect_unattended_upgrades
}

collect_cdi() {
    # /var/run/cdi has the higher priority in CDI, so it goes first and wins a name clash.
    for i_dir in /var/run/cdi /etc/cdi; do
        for i_file in "$R$i_dir"/*; do
            [ -f "$i_file" ] || continue
            i_name=${i_file##*/}
            if ! safe_rel "$i_name"; then
                fail_step cdi "refused an unsafe file name: $i_name" cat "$i_file"
            elif [ -e "$out/cdi/$i_name" ]; then
                fail_step "cdi/$i_name" "name clash: kept /var/run/cdi/$i_name, skipped $i_dir/$i_name" cat "$i_file"
            else
                run_step "cdi/$i_name" cat "$i_file"
            fi
        done
    done
}

main() {
    log "collecting from root $ROOT (since $SINCE, cap $MAX_BYTES bytes, step timeout ${STEP_TIMEOUT}s)"
    collect_containerd
    collect_journals
    collect_dmesg
    collect_nvidia_smi
    run_step systemd/containerd.txt systemctl show containerd -p "$SYSTEMD_PROPS"
    collect_host
    collect_cdi
    log "writing the tar stream"
    tar -cf - -C "$out" . >&3 || die "tar failed"
}

# stdout (fd 1) goes to stderr while collecting; only the tar goes to fd 3.
main </dev/null 3>&1 1>&2
exit $?
