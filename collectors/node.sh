#!/bin/sh
# gpu-triage node collector (bundle format 1, revision 1.1, node part).
#
# Runs as root on one Kubernetes node and writes a tar stream to stdout holding
# the files of nodes/<node-name>/ (paths relative to that directory) plus
# steps.tsv, one line per attempted step. collect.py turns steps.tsv into
# manifest items and never puts steps.tsv itself into the bundle.
#
# It is read-only: it only runs commands that print state and copies files.
# It first works out which runtime and distribution the node runs (runtime.json)
# and then reads the configuration that runtime really runs with: k3s, RKE2,
# k0s and MicroK8s bundle their own containerd with its own config file, and
# OpenShift nodes run CRI-O.
# It works fed on stdin (`sh -s`, as the collector does through kubectl debug,
# ssh or locally) or as a file (`sh node.sh`).
#
# Environment (all optional):
#   GPU_TRIAGE_HOST_ROOT       directory standing in for the host's /        (default /)
#   GPU_TRIAGE_SINCE           journal window, e.g. 168h, 7d                  (default 168h)
#   GPU_TRIAGE_MAX_FILE_BYTES  cap per collected file; longer output is cut (default 52428800)
#   GPU_TRIAGE_STEP_TIMEOUT    seconds per command, when timeout(1) exists   (default 60)
#   GPU_TRIAGE_ONLY_IF_NVIDIA  1: run lspci first and stop when it shows no NVIDIA device
#                              (set by the collector for nodes chosen without any GPU
#                              label; the stop is a steps.tsv line with path ".") (default 0)
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

# LoadState first: `systemctl show` of a unit that does not exist still exits 0
# and prints Restart=no, which only LoadState=not-found tells apart.
SYSTEMD_PROPS='LoadState,ActiveState,SubState,Restart,RestartUSec,NRestarts,ExecMainPID,ExecMainStartTimestamp'
# Units whose journal is taken where they exist; containerd and kubelet always.
# cri-docker: Mirantis cri-dockerd's unit (packaging/systemd/cri-docker.service there).
# nvidia-cdi-refresh: the toolkit's CDI spec generator, `nvidia-ctk cdi generate` as a oneshot
# unit (https://github.com/NVIDIA/nvidia-container-toolkit/blob/main/deployments/systemd/nvidia-cdi-refresh.service).
JOURNAL_UNITS='k3s k3s-agent rke2-server rke2-agent k0sworker k0scontroller snap.microk8s.daemon-containerd snap.microk8s.daemon-kubelite crio docker cri-docker nvidia-fabricmanager nvidia-persistenced nvidia-cdi-refresh'
# Units of a runtime or a kubelet: systemd/<unit>.txt where they exist; containerd and kubelet always.
RUNTIME_UNITS='crio docker k3s k3s-agent rke2-server rke2-agent k0sworker k0scontroller snap.microk8s.daemon-containerd snap.microk8s.daemon-kubelite'
# Lines kept from the end of a containerd log file (k3s, RKE2), before the byte cap.
LOG_TAIL_LINES=20000
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
ONLY_IF_NVIDIA=${GPU_TRIAGE_ONLY_IF_NVIDIA:-0}

case $ROOT in /*) ;; *) die "GPU_TRIAGE_HOST_ROOT must be an absolute path" ;; esac
case $SINCE in '' | *[!0-9smhdw]* | [!0-9]*) die "GPU_TRIAGE_SINCE must look like 168h" ;; esac
case $MAX_BYTES in '' | *[!0-9]*) die "GPU_TRIAGE_MAX_FILE_BYTES must be a number" ;; esac
case $STEP_TIMEOUT in '' | *[!0-9]*) die "GPU_TRIAGE_STEP_TIMEOUT must be a number" ;; esac
case $ONLY_IF_NVIDIA in 0 | 1) ;; *) die "GPU_TRIAGE_ONLY_IF_NVIDIA must be 0 or 1" ;; esac

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

# ---------------------------------------------------------------------------
# Host processes: one pass over /proc, names only; command lines on demand.
# ---------------------------------------------------------------------------

# scan_procs: write "pid<TAB>comm" of every process to $work/procs.
scan_procs() {
    : >"$work/procs"
    for p_dir in "$R"/proc/[0-9]*; do
        [ -r "$p_dir/comm" ] || continue
        p_comm=
        { IFS= read -r p_comm <"$p_dir/comm"; } 2>/dev/null || continue
        printf '%s\t%s\n' "${p_dir##*/}" "$p_comm" >>"$work/procs"
    done
}

# procs_named REGEX: "pid<TAB>comm" lines whose comm matches REGEX (anchored).
procs_named() {
    awk -F "$TAB" -v re="^($1)\$" '$2 ~ re' "$work/procs"
}

# Flags whose value is a secret on a command line: k3s/RKE2 `--token` and its short form
# `-t`, `--agent-token`, `--vpn-auth`, `--etcd-s3-access-key`/`--etcd-s3-secret-key`,
# `--datastore-endpoint` (a database URL with its password; https://docs.k3s.io/cli/server),
# kubeadm's `--certificate-key`, any password or secret. collect.py redacts the same and more
# (collectors/redact.py); this is for node.sh run by hand.
SECRET_FLAG_RE='(token|passw|secret|credential|datastore-endpoint|vpn-auth|access-key|certificate-key|^-t$)'

# cmdline_of PID: the process's arguments joined by single spaces, the values of
# secret-looking flags (--token=X, --token X) replaced by <redacted>.
cmdline_of() {
    tr '\000' '\n' <"$R/proc/$1/cmdline" 2>/dev/null | awk -v pat="$SECRET_FLAG_RE" '
        hide && !/^-/ { print "<redacted>"; hide = 0; next }
        { hide = 0; flag = $0; sub(/=.*/, "", flag) }
        flag ~ /^-/ && tolower(flag) ~ pat {
            if (index($0, "=")) { print flag "=<redacted>" } else { print; hide = 1 }
            next
        }
        { print }' | tr '\n' ' ' | sed 's/ *$//'
}

# arg_value TEXT FLAG...: the value of the first FLAG in a space-joined command
# line, written `FLAG=value` or `FLAG value`; empty when absent.
arg_value() {
    v_text=$1
    shift
    printf '%s\n' "$v_text" | tr ' ' '\n' | awk -v flags="$*" '
        BEGIN { n = split(flags, f, " ") }
        want { print; exit }
        {
            for (i = 1; i <= n; i++) {
                if ($0 == f[i]) { want = 1; next }
                if (index($0, f[i] "=") == 1) { print substr($0, length(f[i]) + 2); exit }
            }
        }'
}

# host_path PATH: PATH as seen on the host (a test root's prefix removed).
host_path() {
    if [ -n "$R" ]; then
        case $1 in "$R"/*) printf '%s' "${1#"$R"}"; return 0 ;; esac
    fi
    printf '%s' "$1"
}

# ---------------------------------------------------------------------------
# The kubelet: command line and config file (host/kubelet.txt)
# ---------------------------------------------------------------------------

# kubelet_config_files: host paths of the kubelet's config files, one a line.
kubelet_config_files() {
    procs_named 'kubelet' | while IFS="$TAB" read -r k_pid _k_comm; do
        k_cmd=$(cmdline_of "$k_pid")
        k_cfg=$(arg_value "$k_cmd" --config)
        [ -z "$k_cfg" ] || printf '%s\n' "$k_cfg"
        k_dir=$(arg_value "$k_cmd" --config-dir)
        if [ -n "$k_dir" ] && [ -d "$R$k_dir" ]; then
            for k_file in "$R$k_dir"/*; do
                [ -f "$k_file" ] && host_path "$k_file" && echo
            done
        fi
    done
    for k_file in /var/lib/kubelet/config.yaml /var/snap/microk8s/current/args/kubelet \
        /var/lib/k0s/kubelet-config.yaml; do
        [ -f "$R$k_file" ] && printf '%s\n' "$k_file"
    done
    for k_dir in /var/lib/rancher/k3s/agent/etc/kubelet.conf.d /var/lib/rancher/rke2/agent/etc/kubelet.conf.d; do
        for k_file in "$R$k_dir"/*; do
            [ -f "$k_file" ] && printf '%s\n' "$k_dir/${k_file##*/}"
        done
    done
}

# The processes that run a kubelet: the kubelet itself, or the distribution's
# single binary that embeds it. Their own config files (/etc/rancher/*/config.yaml)
# can hold join tokens and are never read.
KUBELET_PROCS='kubelet|kubelite|k3s|k3s-server|k3s-agent|rke2|k0s'

collect_kubelet() {
    b_t0=$(now_ms)
    b_started=$(now_iso)
    b_dest=$out/host/kubelet.txt
    mkdir -p "$out/host"
    : >"$b_dest"
    rc=0
    truncated=0
    : >"$work/err"
    set -- cat
    procs_named "$KUBELET_PROCS" >"$work/kubelet-procs"
    while IFS="$TAB" read -r b_pid b_comm; do
        {
            printf '==> process %s %s: /proc/%s/cmdline <==\n' "$b_pid" "$b_comm" "$b_pid"
            cmdline_of "$b_pid"
            echo
        } >>"$b_dest"
        set -- "$@" "$R/proc/$b_pid/cmdline"
    done <"$work/kubelet-procs"
    kubelet_config_files | awk '!seen[$0]++' >"$work/kubelet-configs"
    while IFS= read -r b_file; do
        if [ -L "$R$b_file" ]; then
            note_link "$b_file" >/dev/null
            continue
        fi
        [ -f "$R$b_file" ] || continue
        printf '==> %s <==\n' "$b_file" >>"$b_dest"
        exec_capture "$b_dest" cat "$R$b_file"
        set -- "$@" "$R$b_file"
        [ "$rc" = 0 ] || break
    done <"$work/kubelet-configs"
    if [ "$rc" = 0 ] && [ ! -s "$b_dest" ]; then
        rc=1
        printf 'no kubelet process and no kubelet config file found\n' >"$work/err"
    fi
    finish_step host/kubelet.txt "$b_started" "$b_t0" "$@"
}

# ---------------------------------------------------------------------------
# Which runtime and distribution (runtime.json)
# ---------------------------------------------------------------------------

# Set by detect_runtime; host paths (without $R).
RT_RUNTIME='' RT_DIST='' RT_CONFIG='' RT_SOCKET='' RT_BINARY='' RT_LOG='' RT_SIGNALS=''

signal() { RT_SIGNALS=$RT_SIGNALS$1$NL; }

# endpoint_runtime TEXT: the runtime a CRI endpoint names.
endpoint_runtime() {
    case $1 in
    *crio.sock*) echo cri-o ;;
    *cri-dockerd* | *dockershim*) echo docker ;;
    *containerd*) echo containerd ;;
    esac
}

detect_distribution() {
    while IFS="$TAB" read -r d_pid d_comm; do
        case $d_comm in
        k3s | k3s-server | k3s-agent) d_found=k3s ;;
        rke2) d_found=rke2 ;;
        k0s) d_found=k0s ;;
        kubelite) d_found=microk8s ;;
        *) continue ;;
        esac
        signal "process $d_comm (pid $d_pid)"
        [ -n "$RT_DIST" ] || RT_DIST=$d_found
    done <"$work/kubelet-procs"
    for d_pair in rke2:/var/lib/rancher/rke2 k3s:/var/lib/rancher/k3s k0s:/var/lib/k0s k0s:/etc/k0s \
        microk8s:/var/snap/microk8s openshift:/etc/machine-config-daemon; do
        if [ -d "$R${d_pair#*:}" ]; then
            signal "directory ${d_pair#*:}"
            [ -n "$RT_DIST" ] || RT_DIST=${d_pair%%:*}
        fi
    done
    if [ -f "$R/etc/os-release" ] && grep -qE '^(ID="?rhcos"?|OPENSHIFT_VERSION=)' "$R/etc/os-release"; then
        signal "/etc/os-release names RHCOS/OpenShift"
        [ -n "$RT_DIST" ] || RT_DIST=openshift
    fi
    for d_file in /var/lib/kubelet/kubeadm-flags.env /etc/kubernetes/manifests/kube-apiserver.yaml; do
        if [ -f "$R$d_file" ]; then
            signal "file $d_file"
            [ -n "$RT_DIST" ] || RT_DIST=kubeadm
        fi
    done
}

detect_runtime_kind() {
    r_endpoint=''
    while IFS="$TAB" read -r r_pid r_comm; do
        r_endpoint=$(arg_value "$(cmdline_of "$r_pid")" --container-runtime-endpoint)
        if [ -n "$r_endpoint" ]; then
            signal "$r_comm --container-runtime-endpoint=$r_endpoint"
            break
        fi
    done <"$work/kubelet-procs"
    if [ -z "$r_endpoint" ]; then
        while IFS= read -r r_file; do
            [ -f "$R$r_file" ] || continue
            r_endpoint=$(sed -n -e 's/^containerRuntimeEndpoint:[[:space:]]*//p' \
                -e 's/^--container-runtime-endpoint[= ]//p' "$R$r_file" | head -n 1 | tr -d "\"'")
            if [ -n "$r_endpoint" ]; then
                signal "$r_file: container runtime endpoint $r_endpoint"
                break
            fi
        done <"$work/kubelet-configs"
    fi
    RT_RUNTIME=$(endpoint_runtime "$r_endpoint")
    case $r_endpoint in
    unix://*) RT_SOCKET=${r_endpoint#unix://} ;;
    /*) RT_SOCKET=$r_endpoint ;;
    esac
    # A socket given through a variable (MicroK8s' args files) is left to the layout below.
    case $RT_SOCKET in *'$'*) RT_SOCKET='' ;; esac
    [ -z "$RT_RUNTIME" ] || return 0
    case $RT_DIST in
    k3s | rke2 | k0s | microk8s) RT_RUNTIME=containerd; return 0 ;;
    openshift) RT_RUNTIME=cri-o; return 0 ;;
    esac
    for r_pair in cri-o:crio containerd:containerd docker:dockerd; do
        if [ -n "$(procs_named "${r_pair#*:}")" ]; then
            signal "process ${r_pair#*:}"
            RT_RUNTIME=${r_pair%%:*}
            return 0
        fi
    done
    for r_pair in cri-o:/etc/crio/crio.conf cri-o:/etc/crio/crio.conf.d containerd:/etc/containerd/config.toml; do
        if [ -e "$R${r_pair#*:}" ]; then
            signal "file ${r_pair#*:}"
            RT_RUNTIME=${r_pair%%:*}
            return 0
        fi
    done
}

# newest_executable GLOB...: the most recently modified executable among the matches.
newest_executable() {
    # shellcheck disable=SC2012 # names are the distribution's own hash directories
    ls -td "$@" 2>/dev/null | while IFS= read -r n_file; do
        if [ -x "$n_file" ]; then
            printf '%s' "$n_file"
            break
        fi
    done
}

containerd_layout() {
    c_bin=''
    case $RT_DIST in
    k3s)
        RT_CONFIG=/var/lib/rancher/k3s/agent/etc/containerd/config.toml
        c_sock=/run/k3s/containerd/containerd.sock
        RT_LOG=/var/lib/rancher/k3s/agent/containerd/containerd.log
        c_bin=$(newest_executable "$R"/var/lib/rancher/k3s/data/current/bin/containerd)
        [ -n "$c_bin" ] || c_bin=$(newest_executable "$R"/var/lib/rancher/k3s/data/*/bin/containerd)
        ;;
    rke2)
        RT_CONFIG=/var/lib/rancher/rke2/agent/etc/containerd/config.toml
        c_sock=/run/k3s/containerd/containerd.sock
        RT_LOG=/var/lib/rancher/rke2/agent/containerd/containerd.log
        c_bin=$(newest_executable "$R"/var/lib/rancher/rke2/bin/containerd)
        [ -n "$c_bin" ] || c_bin=$(newest_executable "$R"/var/lib/rancher/rke2/data/*/bin/containerd)
        ;;
    k0s)
        RT_CONFIG=/etc/k0s/containerd.toml
        c_sock=/run/k0s/containerd.sock
        c_bin=$(newest_executable "$R"/var/lib/k0s/bin/containerd)
        ;;
    microk8s)
        RT_CONFIG=/var/snap/microk8s/current/args/containerd.toml
        c_sock=/var/snap/microk8s/common/run/containerd.sock
        c_bin=$(newest_executable "$R"/snap/microk8s/current/bin/containerd)
        ;;
    *)
        RT_CONFIG=/etc/containerd/config.toml
        c_sock=/run/containerd/containerd.sock
        ;;
    esac
    # The running containerd's own flags beat the distribution's defaults.
    c_pid=$(procs_named containerd | head -n 1 | cut -f 1)
    if [ -n "$c_pid" ]; then
        c_cmd=$(cmdline_of "$c_pid")
        c_flag=$(arg_value "$c_cmd" --config -c)
        if [ -n "$c_flag" ]; then
            signal "containerd process (pid $c_pid) --config $c_flag"
            RT_CONFIG=$c_flag
        fi
        c_flag=$(arg_value "$c_cmd" --address -a)
        if [ -n "$c_flag" ]; then
            signal "containerd process (pid $c_pid) --address $c_flag"
            c_sock=$c_flag
        fi
    fi
    [ -n "$RT_SOCKET" ] || RT_SOCKET=$c_sock
    if [ -n "$c_bin" ]; then
        RT_BINARY=$(host_path "$c_bin")
        CTD_BIN=$c_bin
    else
        case $RT_DIST in
        k3s | rke2 | k0s | microk8s) signal "no bundled containerd binary found; used containerd from PATH" ;;
        esac
        CTD_BIN=containerd
        RT_BINARY=$(command -v containerd 2>/dev/null)
    fi
}

detect_runtime() {
    j_t0=$(now_ms)
    j_started=$(now_iso)
    detect_distribution
    detect_runtime_kind
    CTD_BIN=containerd
    case $RT_RUNTIME in
    cri-o)
        RT_CONFIG=/etc/crio/crio.conf
        [ -n "$RT_SOCKET" ] || RT_SOCKET=/var/run/crio/crio.sock
        RT_BINARY=$(command -v crio 2>/dev/null)
        ;;
    docker)
        RT_CONFIG=/etc/docker/daemon.json
        [ -n "$RT_SOCKET" ] || RT_SOCKET=/run/cri-dockerd.sock
        RT_BINARY=$(command -v dockerd 2>/dev/null)
        ;;
    *)
        containerd_layout
        ;;
    esac
    j_config=$RT_CONFIG j_socket=$RT_SOCKET j_binary=$RT_BINARY
    if [ -z "$RT_RUNTIME" ]; then j_config='' j_socket='' j_binary=''; fi
    j_sep=''
    {
        printf '{"runtime": %s, "distribution": %s, ' "$(json_or_null "$RT_RUNTIME")" "$(json_or_null "$RT_DIST")"
        printf '"config_path": %s, "socket": %s, ' "$(json_or_null "$j_config")" "$(json_or_null "$j_socket")"
        printf '"binary": %s, "signals": [' "$(json_or_null "$j_binary")"
        printf '%s' "$RT_SIGNALS" | awk 'NF' | while IFS= read -r j_sig; do
            printf '%s' "$j_sep$(json_str "$j_sig")"
            j_sep=', '
        done
        printf ']}\n'
    } >"$out/runtime.json"
    rc=0
    truncated=0
    log "runtime ${RT_RUNTIME:-unknown}, distribution ${RT_DIST:-unknown}"
    finish_step runtime.json "$j_started" "$j_t0" node.sh detect-runtime
}

# json_str TEXT: TEXT as a JSON string (control characters dropped).
json_str() {
    printf '"%s"' "$(printf '%s' "$1" | tr -d '\000-\037' | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')"
}

json_or_null() {
    if [ -n "$1" ]; then json_str "$1"; else printf 'null'; fi
}

# ---------------------------------------------------------------------------
# Runtime configuration
# ---------------------------------------------------------------------------

: >"$work/copied"

# copy_file PREFIX HOSTPATH: PREFIX/files/<host path> from $R<host path>, once. A symbolic
# link is recorded (links.txt), never followed: only a target that is itself a file read
# anyway is copied, as itself.
copy_file() {
    o_rel=${2#/}
    if grep -qxF "$1/$o_rel" "$work/copied"; then return 0; fi
    printf '%s\n' "$1/$o_rel" >>"$work/copied"
    if [ -L "$R$2" ]; then
        o_target=$(note_link "$2")
        if [ -n "$o_target" ]; then copy_file "$1" "$o_target"; fi
        return 0
    fi
    if safe_rel "$o_rel"; then
        run_step "$1/files/$o_rel" cat "$R$2"
    else
        fail_step "$1/files" "refused an unsafe file name: $o_rel" cat "$R$2"
    fi
}

# Symbolic links met on the way: "host path -> target" lines for links.txt.
: >"$work/links"
: >"$work/link-paths"

# read_anyway HOSTPATH: true for the files this script reads in any case.
read_anyway() {
    case $1 in
    /etc/containerd/config.toml | /etc/containerd/conf.d/* | /etc/k0s/containerd.toml | \
        /etc/k0s/containerd.d/* | /var/lib/rancher/k3s/agent/etc/containerd/* | \
        /var/lib/rancher/rke2/agent/etc/containerd/* | /var/snap/microk8s/*/args/containerd* | \
        /etc/crio/crio.conf | /etc/crio/crio.conf.d/* | /usr/share/containers/oci/hooks.d/* | \
        /etc/containers/oci/hooks.d/* | /etc/docker/daemon.json | /etc/cdi/* | /var/run/cdi/* | \
        /run/cdi/* | /usr/lib/os-release | /etc/nvidia-container-runtime/config.toml | \
        /usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml)
        return 0
        ;;
    esac
    [ -n "$RT_CONFIG" ] && [ "$1" = "$RT_CONFIG" ]
}

# note_link HOSTPATH: record the link at HOSTPATH; print the host path of its final target
# when that is a regular file this script reads anyway (below the host root), else nothing.
note_link() {
    n_target=$(readlink "$R$1" 2>/dev/null)
    printf '%s -> %s\n' "$1" "$n_target" >>"$work/links"
    printf '%s\n' "$1" >>"$work/link-paths"
    log "$1: a symbolic link to $n_target: recorded, not followed"
    n_real=$(readlink -f "$R$1" 2>/dev/null) || return 0
    case $n_real in "$R"/*) n_real=${n_real#"$R"} ;; *) return 0 ;; esac
    if read_anyway "$n_real" && [ -f "$R$n_real" ] && [ ! -L "$R$n_real" ]; then
        printf '%s' "$n_real"
    fi
}

# finish_links: links.txt, when any link was met.
finish_links() {
    [ -s "$work/links" ] || return 0
    cp "$work/links" "$out/links.txt"
    set -- readlink
    while IFS= read -r l_path; do set -- "$@" "$R$l_path"; done <"$work/link-paths"
    record links.txt 0 "$(now_iso)" 0 "$(wc -c <"$out/links.txt" | tr -d ' ')" 0 '' "$@"
}

# copy_dir PREFIX HOSTDIR: every file under $R<hostdir>.
copy_dir() {
    if [ -L "$R$2" ]; then
        note_link "$2" >/dev/null
        return 0
    fi
    [ -d "$R$2" ] || return 0
    find "$R$2" \( -type f -o -type l \) 2>/dev/null | sort >"$work/dir-list"
    while IFS= read -r y_file; do
        [ -f "$y_file" ] || [ -L "$y_file" ] || continue
        copy_file "$1" "${y_file#"$R"}"
    done <"$work/dir-list"
}

# toml_imports FILE: the strings of the top-level `imports = [...]` array.
toml_imports() {
    awk '
        /^[[:space:]]*\[/ { exit }
        /^[[:space:]]*imports[[:space:]]*=/ { inside = 1 }
        inside {
            line = $0
            sub(/#.*/, "", line)
            while (match(line, /"[^"]*"|\047[^\047]*\047/)) {
                print substr(line, RSTART + 1, RLENGTH - 2)
                line = substr(line, RSTART + RLENGTH)
            }
            if (index($0, "]")) inside = 0
        }' "$1" 2>/dev/null
}

# copy_imports TOMLFILE: copy every file the config's imports name (globs expanded).
copy_imports() {
    toml_imports "$1" >"$work/imports"
    c_dir=$(dirname "$RT_CONFIG")
    while IFS= read -r m_path; do
        m_path=$(host_path "$m_path")
        case $m_path in /*) ;; *) m_path=$c_dir/$m_path ;; esac
        m_old_ifs=$IFS
        IFS=$NL
        # shellcheck disable=SC2086 # the import may be a glob: expanded on purpose
        for m_file in $R$m_path; do
            IFS=$m_old_ifs
            if [ -f "$m_file" ] || [ -L "$m_file" ]; then
                copy_file containerd "$(host_path "$m_file")"
            fi
        done
        IFS=$m_old_ifs
    done <"$work/imports"
}

collect_containerd() {
    run_step containerd/version.txt "$CTD_BIN" --version
    if [ -f "$R$RT_CONFIG" ]; then
        run_step containerd/config-dump.toml "$CTD_BIN" --config "$R$RT_CONFIG" config dump
    else
        run_step containerd/config-dump.toml "$CTD_BIN" config dump
    fi
    # The stock path always (the toolkit may have written there by mistake),
    # then the file containerd runs with and the templates it is built from.
    copy_file containerd /etc/containerd/config.toml
    if [ -f "$R$RT_CONFIG" ]; then copy_file containerd "$RT_CONFIG"; fi
    t_dir=$(dirname "$RT_CONFIG")
    for t_name in config.toml.tmpl config-v3.toml.tmpl containerd-template.toml; do
        if [ -f "$R$t_dir/$t_name" ]; then copy_file containerd "$t_dir/$t_name"; fi
    done
    # imports of the loaded configuration; of the file itself when the dump failed.
    if [ -s "$out/containerd/config-dump.toml" ]; then
        copy_imports "$out/containerd/config-dump.toml"
    fi
    copy_imports "$R$RT_CONFIG"
    copy_dir containerd /etc/containerd/conf.d
    if [ -n "$RT_LOG" ] && [ -L "$R$RT_LOG" ]; then
        note_link "$RT_LOG" >/dev/null
    elif [ -n "$RT_LOG" ] && [ -f "$R$RT_LOG" ]; then
        run_step containerd/log.txt tail -n "$LOG_TAIL_LINES" "$R$RT_LOG"
    fi
}

collect_crio() {
    run_step crio/version.txt crio --version
    g_t0=$(now_ms)
    g_started=$(now_iso)
    mkdir -p "$out/crio"
    : >"$out/crio/config-dump.toml"
    exec_capture "$out/crio/config-dump.toml" crio status config
    set -- crio status config
    if [ "$rc" != 0 ] && command -v crio >/dev/null 2>&1; then
        log "crio status config failed, trying crio config"
        : >"$out/crio/config-dump.toml"
        exec_capture "$out/crio/config-dump.toml" crio config
        set -- crio config
    fi
    finish_step crio/config-dump.toml "$g_started" "$g_t0" "$@"
    if [ -f "$R/etc/crio/crio.conf" ]; then copy_file crio /etc/crio/crio.conf; fi
    for g_dir in /etc/crio/crio.conf.d /usr/share/containers/oci/hooks.d /etc/containers/oci/hooks.d; do
        copy_dir crio "$g_dir"
    done
}

collect_runtime() {
    case $RT_RUNTIME in
    cri-o) log "containerd: skipped, the node runs CRI-O" ;;
    *) collect_containerd ;;
    esac
    if [ "$RT_RUNTIME" = cri-o ] || [ -d "$R/etc/crio" ]; then collect_crio; fi
    if [ "$RT_RUNTIME" = docker ]; then
        copy_file docker /etc/docker/daemon.json
    fi
    collect_docker_info
}

# docker/info.json: `docker info` as JSON where a Docker daemon is there to answer (the
# runtime is Docker, or a dockerd process or docker unit exists); a docker CLI alone is not
# asked, so a node without a daemon has no failed step.
collect_docker_info() {
    command -v docker >/dev/null 2>&1 || return 0
    if [ "$RT_RUNTIME" = docker ] || [ -n "$(procs_named dockerd)" ] || unit_exists docker; then
        run_step docker/info.json docker info --format '{{json .}}'
    else
        log "docker/info.json: skipped, a docker CLI but no Docker daemon"
    fi
}

# The NVIDIA Container Runtime's config: the host packages' file, and the one the GPU
# Operator's toolkit container writes below its install directory (toolkit.installDir,
# /usr/local/nvidia/toolkit by default). Each where it exists.
TOOLKIT_CONFIGS='/etc/nvidia-container-runtime/config.toml /usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml'

collect_toolkit() {
    for t_file in $TOOLKIT_CONFIGS; do
        if [ -f "$R$t_file" ] || [ -L "$R$t_file" ]; then
            copy_file toolkit "$t_file"
        else
            log "toolkit/files$t_file: skipped, no such file"
        fi
    done
}

# kubelet_root_dir: the kubelet's --root-dir, else the distribution's default.
kubelet_root_dir() {
    while IFS="$TAB" read -r l_pid _l_comm; do
        l_dir=$(arg_value "$(cmdline_of "$l_pid")" --root-dir)
        if [ -n "$l_dir" ]; then
            printf '%s' "${l_dir%/}"
            return 0
        fi
    done <"$work/kubelet-procs"
    case $RT_DIST in
    microk8s) printf '/var/snap/microk8s/common/var/lib/kubelet' ;;
    k0s) printf '/var/lib/k0s/kubelet' ;;
    *) printf '/var/lib/kubelet' ;;
    esac
}

# The kubelet's device-manager checkpoint (which devices it handed to which pod) and its
# CPU-manager state (the policy, and the CPUs pinned to containers), where they exist.
collect_kubelet_state() {
    l_root=$(kubelet_root_dir)
    for l_file in device-plugins/kubelet_internal_checkpoint cpu_manager_state; do
        if [ -f "$R$l_root/$l_file" ] || [ -L "$R$l_root/$l_file" ]; then
            copy_file kubelet "$l_root/$l_file"
        else
            log "kubelet/files$l_root/$l_file: skipped, no such file"
        fi
    done
}

# ---------------------------------------------------------------------------
# systemd and journals
# ---------------------------------------------------------------------------

unit_exists() {
    if command -v systemctl >/dev/null 2>&1; then
        case $(systemctl show -p LoadState "$1" </dev/null 2>/dev/null) in
        *LoadState=loaded*) return 0 ;;
        esac
    fi
    for u_dir in /etc/systemd/system /run/systemd/system /usr/local/lib/systemd/system \
        /lib/systemd/system /usr/lib/systemd/system; do
        if [ -f "$R$u_dir/$1.service" ]; then return 0; fi
    done
    return 1
}

collect_journals() {
    for j_unit in containerd kubelet; do
        run_step "journal/$j_unit.jsonl" journalctl -u "$j_unit" -o json --since "-$SINCE"
    done
    for j_unit in $JOURNAL_UNITS; do
        if unit_exists "$j_unit"; then
            run_step "journal/$j_unit.jsonl" journalctl -u "$j_unit" -o json --since "-$SINCE"
        else
            log "journal/$j_unit.jsonl: skipped, no such unit"
        fi
    done
}

collect_systemd() {
    for s_unit in containerd kubelet; do
        run_step "systemd/$s_unit.txt" systemctl show "$s_unit" -p "$SYSTEMD_PROPS"
    done
    for s_unit in $RUNTIME_UNITS; do
        if unit_exists "$s_unit"; then
            run_step "systemd/$s_unit.txt" systemctl show "$s_unit" -p "$SYSTEMD_PROPS"
        fi
    done
}

# ---------------------------------------------------------------------------
# Kernel and host
# ---------------------------------------------------------------------------

collect_dmesg() {
    d_t0=$(now_ms)
    d_started=$(now_iso)
    : >"$out/dmesg.txt"
    exec_capture "$out/dmesg.txt" dmesg --time-format iso
    set -- dmesg --time-format iso
    if [ "$rc" != 0 ] && command -v dmesg >/dev/null 2>&1; then
        log "dmesg --time-format iso failed, trying plain dmesg"
        : >"$out/dmesg.txt"
        exec_capture "$out/dmesg.txt" dmesg
        set -- dmesg
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
        if [ -L "$R$a_file" ]; then
            note_link "$a_file" >/dev/null
            continue
        fi
        [ -f "$R$a_file" ] || continue
        printf '==> %s <==\n' "$a_file" >>"$a_dest"
        exec_capture "$a_dest" cat "$R$a_file"
        set -- "$@" "$R$a_file"
        [ "$rc" = 0 ] || break
    done
    finish_step host/unattended-upgrades.txt "$a_started" "$a_t0" "$@"
}

# cgroup.txt: `key: value` lines; see docs/bundle-format.md.
collect_cgroup() {
    q_t0=$(now_ms)
    q_started=$(now_iso)
    q_dest=$out/host/cgroup.txt
    : >"$q_dest"
    exec_capture "$work/cgroup-fs" stat -fc %T "$R/sys/fs/cgroup"
    q_fs=$(head -n 1 "$work/cgroup-fs" 2>/dev/null)
    rm -f "$work/cgroup-fs"
    q_version=unknown
    if [ "$q_fs" = cgroup2fs ] || [ -f "$R/sys/fs/cgroup/cgroup.controllers" ]; then
        q_version=2
    elif [ "$q_fs" = tmpfs ] || [ -d "$R/sys/fs/cgroup/memory" ]; then
        q_version=1
    fi
    {
        printf 'fs-type: %s\n' "${q_fs:-unknown}"
        printf 'version: %s\n' "$q_version"
        q_driver=''
        while IFS= read -r q_file; do
            [ -f "$R$q_file" ] || continue
            q_driver=$(sed -n -e 's/^cgroupDriver:[[:space:]]*//p' -e 's/^--cgroup-driver[= ]//p' \
                -e 's/.*"cgroupDriver":[[:space:]]*"\([A-Za-z]*\)".*/\1/p' "$R$q_file" |
                head -n 1 | tr -d "\"' ")
            if [ -n "$q_driver" ]; then
                printf 'kubelet-cgroup-driver: %s (%s)\n' "$q_driver" "$q_file"
                break
            fi
        done <"$work/kubelet-configs"
        if [ -z "$q_driver" ]; then
            q_driver=$(cut -f 1 "$work/kubelet-procs" | while IFS= read -r q_pid; do
                arg_value "$(cmdline_of "$q_pid")" --cgroup-driver
            done | head -n 1)
            printf 'kubelet-cgroup-driver: %s\n' "${q_driver:-not set}"
        fi
        if [ -s "$out/containerd/config-dump.toml" ]; then
            awk '/^[[:space:]]*\[/ { table = $0; gsub(/^[[:space:]]+/, "", table) }
                /^[[:space:]]*SystemdCgroup[[:space:]]*=/ {
                    line = $0; gsub(/^[[:space:]]+/, "", line)
                    print "containerd: " table " " line
                }' "$out/containerd/config-dump.toml"
        fi
        if [ -s "$out/crio/config-dump.toml" ]; then
            sed -n 's/^[[:space:]]*\(cgroup_manager[[:space:]]*=.*\)/crio: \1/p' "$out/crio/config-dump.toml"
        fi
    } >>"$q_dest"
    rc=0
    truncated=0
    finish_step host/cgroup.txt "$q_started" "$q_t0" stat -fc %T /sys/fs/cgroup
}

collect_selinux() {
    if command -v getenforce >/dev/null 2>&1; then
        run_step host/selinux.txt getenforce
    elif [ -f "$R/sys/fs/selinux/enforce" ]; then
        run_step host/selinux.txt cat "$R/sys/fs/selinux/enforce"
    else
        log "host/selinux.txt: skipped, no SELinux (no getenforce, no /sys/fs/selinux)"
    fi
}

# The lines of `ls -l /dev/nvidia* /dev/char` that name NVIDIA devices, the
# paths shown as on the host. (These two run under `sh -c SCRIPT sh ROOT`, so
# that the step timeout applies; $1 is expanded there.)
# shellcheck disable=SC2016
DEV_SCRIPT='cd "$1/dev" || exit 1
echo "==> /dev/nvidia* <=="
for f in nvidia*; do [ -e "$f" ] || [ -L "$f" ] || continue; ls -ld "$f"; done
echo "==> /dev/char <=="
[ -d char ] && ls -l char | grep -i nvidia
exit 0'

# shellcheck disable=SC2016
GPU_PROC_SCRIPT='for d in "$1"/proc/[0-9]*; do
c=; { IFS= read -r c <"$d/comm"; } 2>/dev/null || continue
case $c in nvidia-persiste* | nv-hostengine | nv-fabricmanage* | dcgm*)
printf "%s\t%s\t%s\n" "${d##*/}" "$c" "$(tr "\000" " " <"$d/cmdline" 2>/dev/null | sed "s/ *\$//")" ;;
esac
done'

collect_host() {
    run_step host/uname.txt uname -a
    # os-release(5): /etc/os-release is often a link to /usr/lib/os-release, read anyway.
    h_file=/etc/os-release
    if [ -L "$R$h_file" ]; then h_file=$(note_link "$h_file"); fi
    if [ -n "$h_file" ]; then
        run_step host/os-release cat "$R$h_file"
    else
        fail_step host/os-release "not read: /etc/os-release is a symbolic link to a file the collector does not read (see links.txt)" cat "$R/etc/os-release"
    fi
    run_step host/cmdline cat "$R/proc/cmdline"
    run_step host/modules.txt cat "$R/proc/modules"
    [ "$LSPCI_DONE" = 1 ] || run_step host/lspci.txt lspci -nnk -d 10de:
    run_step host/nvidia-driver-version.txt cat "$R/proc/driver/nvidia/version"
    run_step host/secureboot.txt mokutil --sb-state
    collect_nvidia_ctk
    collect_unattended_upgrades
    collect_cgroup
    collect_selinux
    run_step host/dev-nvidia.txt sh -c "$DEV_SCRIPT" sh "$R"
    run_step host/gpu-processes.txt sh -c "$GPU_PROC_SCRIPT" sh "$R"
}

collect_cdi() {
    # /var/run/cdi has the higher priority in CDI, so it goes first and wins a name clash.
    for i_dir in /var/run/cdi /etc/cdi; do
        for i_file in "$R$i_dir"/*; do
            if [ -L "$i_file" ]; then
                note_link "${i_file#"$R"}" >/dev/null
                continue
            fi
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

# no_nvidia_device: true when lspci ran and listed no NVIDIA device.
LSPCI_DONE=0
no_nvidia_device() {
    run_step host/lspci.txt lspci -nnk -d 10de:
    LSPCI_DONE=1
    [ "$rc" = 0 ] && ! grep -q . "$out/host/lspci.txt" 2>/dev/null
}

main() {
    log "collecting from root $ROOT (since $SINCE, cap $MAX_BYTES bytes, step timeout ${STEP_TIMEOUT}s)"
    if [ "$ONLY_IF_NVIDIA" = 1 ] && no_nvidia_device; then
        fail_step . "stopped early: lspci -nnk -d 10de: shows no NVIDIA device on this node" \
            lspci -nnk -d 10de:
        tar -cf - -C "$out" . >&3 || die "tar failed"
        return 0
    fi
    scan_procs
    collect_kubelet
    detect_runtime
    collect_runtime
    collect_journals
    collect_systemd
    collect_dmesg
    collect_nvidia_smi
    collect_host
    collect_cdi
    collect_toolkit
    collect_kubelet_state
    finish_links
    log "writing the tar stream"
    tar -cf - -C "$out" . >&3 || die "tar failed"
}

# stdout (fd 1) goes to stderr while collecting; only the tar goes to fd 3.
main </dev/null 3>&1 1>&2
exit $?
