#!/bin/bash
# A one-node Slurm cluster on this machine for the tests (run as root):
#
#   tests/scripts/slurm.sh start DIR    # munged, slurmctld, slurmd; DIR/slurm.conf
#   tests/scripts/slurm.sh stop DIR     # stops what start started
#
# Everything lives in DIR (configuration, state, spool, logs, pid files)
# except munge's key and socket, which munged keeps in its own places.
# The node has this machine's short host name and 2 CPUs; the partition
# oversubscribes up to 8 tasks per CPU so that more ranks than cores run.
set -eu
cmd=$1
D=$2
case "$cmd" in
start)
    mkdir -p "$D/state" "$D/spool" "$D/log"
    HOST=$(hostname -s)
    if [ ! -s /etc/munge/munge.key ]; then
        mkdir -p /etc/munge
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
    fi
    chown munge:munge /etc/munge/munge.key
    chmod 400 /etc/munge/munge.key
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
        su -s /bin/sh munge -c "/usr/sbin/munged --force"
        touch "$D/munged.ours"
        for _ in $(seq 50); do
            munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && break
            sleep 0.1
        done
    fi
    cat > "$D/slurm.conf" <<CONF
ClusterName=hctest
SlurmctldHost=$HOST
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=$HOST CPUs=2 State=UNKNOWN
PartitionName=test Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF
    export SLURM_CONF="$D/slurm.conf"
    /usr/sbin/slurmctld -f "$D/slurm.conf"
    /usr/sbin/slurmd -f "$D/slurm.conf"
    for _ in $(seq 100); do
        if sinfo -h -o %T 2>/dev/null | grep -q idle; then
            exit 0
        fi
        sleep 0.2
    done
    echo "slurm did not come up; the end of its logs:" >&2
    tail -n 20 "$D/log/"*.log >&2 || true
    exit 1
    ;;
stop)
    pids=""
    for f in slurmd slurmctld; do
        if [ -s "$D/$f.pid" ]; then
            pids="$pids $(cat "$D/$f.pid")"
        fi
    done
    if [ -e "$D/munged.ours" ] && [ -s /run/munge/munged.pid ]; then
        pids="$pids $(cat /run/munge/munged.pid)"
    fi
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for _ in $(seq 50); do
        alive=""
        for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ -z "$alive" ] && exit 0
        sleep 0.1
    done
    for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
    ;;
*)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac
