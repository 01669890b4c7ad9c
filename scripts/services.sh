#!/usr/bin/env bash
# What the tests need from the machine, installed when missing and started when down:
#   - PostgreSQL answering at 127.0.0.1:5432, trust auth for local TCP (user postgres);
#   - Redis answering at 127.0.0.1:6379;
#   - OpenSSH's sshd binary (/usr/sbin/sshd). It is NOT started: the SFTP tests start their
#     own sshd with their own config and port.
#   - Debian's chromium (/usr/bin/chromium), the headless browser of the console's browser
#     test (tests/api/console/test_browser.py), driven by Playwright's Python package; never
#     `playwright install`, which downloads a browser build.
# Idempotent: when everything is installed and answering it changes nothing.
# Debian only (apt-get, pg_ctlcluster). Run as root, or as a user with passwordless sudo.
#
# Knobs (for testing this script against a scratch cluster, not for everyday use):
#   QUARRY_PG_PORT (5432), QUARRY_PG_CLUSTER (main; used only when a cluster must be
#   created), QUARRY_REDIS_PORT (6379), QUARRY_SERVICES_TIMEOUT (60 seconds per service).
set -euo pipefail

PG_PORT="${QUARRY_PG_PORT:-5432}"
PG_CLUSTER="${QUARRY_PG_CLUSTER:-main}"
REDIS_PORT="${QUARRY_REDIS_PORT:-6379}"
TIMEOUT="${QUARRY_SERVICES_TIMEOUT:-60}"
export DEBIAN_FRONTEND=noninteractive

SUDO=()
if [[ "$(id -u)" != 0 ]]; then
    SUDO=(sudo -n)
fi

say() { echo "services: $*"; }
die() {
    echo "services: error: $*" >&2
    exit 1
}

# Polls `$@` once a second until it succeeds or TIMEOUT seconds pass.
wait_until() {
    local deadline=$((SECONDS + TIMEOUT))
    until "$@"; do
        if ((SECONDS >= deadline)); then
            return 1
        fi
        sleep 1
    done
}

# --- install -----------------------------------------------------------------------------

missing=()
if ! command -v pg_ctlcluster >/dev/null || ! command -v pg_isready >/dev/null \
    || ! compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; then
    missing+=(postgresql)
fi
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    missing+=(redis-server)
fi
if [[ ! -x /usr/sbin/sshd ]]; then
    missing+=(openssh-server)
fi
if [[ ! -x /usr/lib/openssh/sftp-server ]]; then
    missing+=(openssh-sftp-server)
fi
if [[ ! -x /usr/bin/chromium ]]; then
    missing+=(chromium)
fi

if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    # Keep package scripts from starting the system's own services (above all the system
    # sshd on :22): this script starts exactly what the tests need, itself. Docker-style
    # images already ship this policy; elsewhere it is in place only during the install.
    policy=/usr/sbin/policy-rc.d
    if [[ ! -e "$policy" ]]; then
        printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee "$policy" >/dev/null
        "${SUDO[@]}" chmod 0755 "$policy"
        trap '"${SUDO[@]}" rm -f "$policy"' EXIT
    fi
    "${SUDO[@]}" apt-get update -qq </dev/null
    "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
fi

# sshd refuses to start without its privilege-separation directory, and /run is emptied
# at boot; the SFTP tests' own sshd needs it as much as the system one would.
if [[ ! -d /run/sshd ]]; then
    "${SUDO[@]}" install -d -m 0755 /run/sshd \
        || say "warning: could not create /run/sshd; the SFTP tests' sshd may not start"
fi

# --- PostgreSQL --------------------------------------------------------------------------

pg_answers() { pg_isready -q -h 127.0.0.1 -p "$PG_PORT" -t 2; }
pg_trusts() {
    PGCONNECT_TIMEOUT=5 psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -w -d postgres \
        -Atqc 'select 1' >/dev/null 2>&1
}

# "VERSION CLUSTER STATUS" of the cluster configured for our port, if any.
pg_cluster_line() {
    pg_lsclusters -h 2>/dev/null | awk -v port="$PG_PORT" '$3 == port { print $1, $2, $4; exit }'
}

if pg_answers; then
    read -r pg_version pg_name _ < <(pg_cluster_line || true) || true
else
    read -r pg_version pg_name pg_status < <(pg_cluster_line || true) || true
    if [[ -z "${pg_version:-}" ]]; then
        pg_version="$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf "%f\n" | sort -V | tail -n 1)"
        pg_name="$PG_CLUSTER"
        if [[ -d "/etc/postgresql/$pg_version/$pg_name" ]]; then
            die "PostgreSQL cluster $pg_version/$pg_name exists but not on port $PG_PORT;" \
                "set its port to $PG_PORT or choose another QUARRY_PG_CLUSTER"
        fi
        say "creating PostgreSQL cluster $pg_version/$pg_name on port $PG_PORT"
        "${SUDO[@]}" pg_createcluster "$pg_version" "$pg_name" --port "$PG_PORT" >/dev/null
        pg_status=down
    fi
    if [[ "$pg_status" == online* ]]; then
        die "PostgreSQL $pg_version/$pg_name is running but does not answer at" \
            "127.0.0.1:$PG_PORT (check listen_addresses in /etc/postgresql/$pg_version/$pg_name)"
    fi
    say "starting PostgreSQL $pg_version/$pg_name"
    "${SUDO[@]}" pg_ctlcluster --skip-systemctl-redirect "$pg_version" "$pg_name" start \
        || die "PostgreSQL $pg_version/$pg_name did not start; see" \
            "/var/log/postgresql/postgresql-$pg_version-$pg_name.log"
    wait_until pg_answers \
        || die "PostgreSQL did not answer at 127.0.0.1:$PG_PORT within ${TIMEOUT}s; see" \
            "/var/log/postgresql/postgresql-$pg_version-$pg_name.log"
fi

if ! pg_trusts; then
    # A fresh Debian cluster asks for passwords over TCP. The tests connect as postgres
    # without one, so loopback connections are trusted: the first matching line wins,
    # hence the block goes on top.
    [[ -n "${pg_version:-}" ]] || die "PostgreSQL answers at 127.0.0.1:$PG_PORT but no local" \
        "cluster on that port was found to configure trust authentication"
    hba="/etc/postgresql/$pg_version/$pg_name/pg_hba.conf"
    marker="# quarry: trust loopback TCP (scripts/services.sh)"
    if ! grep -qF "$marker" "$hba"; then
        say "trusting loopback connections in $hba"
        {
            echo "$marker"
            echo "host    all             all             127.0.0.1/32            trust"
            echo "host    all             all             ::1/128                 trust"
            "${SUDO[@]}" cat "$hba"
        } | "${SUDO[@]}" tee "$hba.quarry-new" >/dev/null
        "${SUDO[@]}" chown --reference="$hba" "$hba.quarry-new"
        "${SUDO[@]}" chmod --reference="$hba" "$hba.quarry-new"
        "${SUDO[@]}" mv "$hba.quarry-new" "$hba"
    fi
    "${SUDO[@]}" pg_ctlcluster --skip-systemctl-redirect "$pg_version" "$pg_name" reload
    wait_until pg_trusts \
        || die "PostgreSQL at 127.0.0.1:$PG_PORT still refuses user postgres without a" \
            "password; check $hba"
fi
say "PostgreSQL answers at 127.0.0.1:$PG_PORT"

# --- Redis -------------------------------------------------------------------------------

redis_answers() {
    [[ "$(timeout 5 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" == PONG ]]
}

if ! redis_answers; then
    say "starting Redis on 127.0.0.1:$REDIS_PORT"
    "${SUDO[@]}" install -d /var/lib/redis /var/log/redis
    # Nothing is kept on disk: the tests use Redis only for rate-limit counters.
    "${SUDO[@]}" redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDIS_PORT" \
        --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log \
        || die "redis-server did not start; see /var/log/redis/ci.log"
    wait_until redis_answers \
        || die "Redis did not answer at 127.0.0.1:$REDIS_PORT within ${TIMEOUT}s; see" \
            "/var/log/redis/ci.log"
fi
say "Redis answers at 127.0.0.1:$REDIS_PORT"
say "sshd is installed at /usr/sbin/sshd (not started; the SFTP tests run their own)"
