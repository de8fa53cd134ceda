#!/bin/bash
# A private OpenSSH server on this machine for the tests:
#
#   tests/scripts/sshd.sh start DIR PORT ADDR...   # sshd on ADDR:PORT; keys in DIR
#   tests/scripts/sshd.sh stop DIR                 # stops what start started
#
# Everything lives in DIR: a fresh host key, a fresh client key pair
# (DIR/id_ed25519, which the server accepts for the user running the
# script), the configuration, the pid file and the log. Only public-key
# logins are accepted, only on the addresses given. DIR/ssh is the ssh
# command that reaches the server (port, key, no known-hosts file).
set -eu
cmd=$1
D=$2
case "$cmd" in
start)
    PORT=$3
    shift 3
    mkdir -p "$D"
    chmod 700 "$D"
    rm -f "$D/host_key" "$D/host_key.pub" "$D/id_ed25519" "$D/id_ed25519.pub"
    ssh-keygen -q -t ed25519 -N '' -C hypercomm-test-host -f "$D/host_key"
    ssh-keygen -q -t ed25519 -N '' -C hypercomm-test-user -f "$D/id_ed25519"
    cp "$D/id_ed25519.pub" "$D/authorized_keys"
    chmod 600 "$D/authorized_keys"
    # The privilege-separation directory sshd insists on.
    mkdir -p /run/sshd
    chmod 755 /run/sshd
    {
        echo "Port $PORT"
        for a in "$@"; do echo "ListenAddress $a"; done
        echo "HostKey $D/host_key"
        echo "PidFile $D/sshd.pid"
        echo "AuthorizedKeysFile $D/authorized_keys"
        echo "PubkeyAuthentication yes"
        echo "PasswordAuthentication no"
        echo "KbdInteractiveAuthentication no"
        echo "PermitRootLogin prohibit-password"
        echo "UsePAM no"
        echo "StrictModes no"
        echo "X11Forwarding no"
        echo "PrintMotd no"
        echo "MaxStartups 64:30:128"
        echo "MaxSessions 64"
        echo "LogLevel ERROR"
    } > "$D/sshd_config"
    cat > "$D/ssh" <<CMD
ssh -p $PORT -i $D/id_ed25519 -o IdentitiesOnly=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR
CMD
    /usr/sbin/sshd -f "$D/sshd_config" -E "$D/sshd.log"
    for _ in $(seq 100); do
        if $(cat "$D/ssh") "$1" true </dev/null 2>/dev/null; then
            exit 0
        fi
        sleep 0.1
    done
    echo "sshd did not come up; its log:" >&2
    cat "$D/sshd.log" >&2 || true
    exit 1
    ;;
stop)
    if [ -s "$D/sshd.pid" ]; then
        p=$(cat "$D/sshd.pid")
        kill "$p" 2>/dev/null || true
        for _ in $(seq 50); do
            kill -0 "$p" 2>/dev/null || exit 0
            sleep 0.1
        done
        kill -9 "$p" 2>/dev/null || true
    fi
    ;;
*)
    echo "usage: $0 start DIR PORT ADDR... | stop DIR" >&2
    exit 2
    ;;
esac
