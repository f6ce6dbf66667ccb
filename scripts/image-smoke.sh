#!/usr/bin/env bash
# Build the container image here and run it as an operator would (docs/deploy.md, "The image
# smoke test"). Not part of .ci/run: it needs a Docker daemon and a few minutes.
#
#   scripts/image-smoke.sh              build the base if missing, the image, then the smoke run
#   scripts/image-smoke.sh --rebuild-base
#
# 1. A Docker daemon: the one that answers, else (as root) dockerd started here with no bridge
#    network and no iptables rules ("bridge": "none"), stopped again at the end. Every container
#    below uses the host's network, and every server listens on 127.0.0.1 only.
# 2. The base image, clarify-base:trixie, when it is missing: Docker Hub cannot be reached from
#    these machines, so Debian 13 (trixie) is bootstrapped from Debian's own packages
#    (debootstrap --variant=minbase), trimmed as debian:trixie-slim is, and imported. This
#    machine's extra CA certificates (/usr/local/share/ca-certificates) are copied into it so
#    that pip inside the build trusts the same proxies as the host; a real registry's base needs
#    none of this (`docker build .` uses debian:trixie-slim).
# 3. The image: docker build --network host --build-arg BASE=clarify-base:trixie, tagged
#    clarify-bot:smoke, with the commit as its build argument; its size is printed.
# 4. scripts/image_smoke.py: --version, the user and the missing build tools, the web and
#    worker containers' /readyz, a card through the fake Slack, a tap recorded by the reference
#    core, the HEALTHCHECK, docker stop within 10 s, every log line JSON.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BASE=clarify-base:trixie
IMAGE=clarify-bot:smoke
STARTED_DOCKERD=""
SCRATCH=$(mktemp -d /var/tmp/clarify-smoke.XXXXXX)

cleanup() {
  if [ -n "$STARTED_DOCKERD" ]; then
    kill "$STARTED_DOCKERD" 2>/dev/null || true
    wait "$STARTED_DOCKERD" 2>/dev/null || true
  fi
  rm -rf "$SCRATCH"
}
trap cleanup EXIT

say() { echo "image-smoke: $*"; }

ensure_daemon() {
  if docker info >/dev/null 2>&1; then return 0; fi
  if [ "$(id -u)" != 0 ] || ! command -v dockerd >/dev/null 2>&1; then
    say "no Docker daemon answers, and this user cannot start one (Debian: apt-get install" \
        "docker.io, then dockerd with {\"bridge\": \"none\", \"iptables\": false})" >&2
    exit 1
  fi
  cat > "$SCRATCH/daemon.json" <<'EOF'
{"bridge": "none", "iptables": false, "ip6tables": false, "ip-forward": false, "ip-masq": false}
EOF
  dockerd --config-file "$SCRATCH/daemon.json" > "$SCRATCH/dockerd.log" 2>&1 &
  STARTED_DOCKERD=$!
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || { say "dockerd did not start:"; tail -5 "$SCRATCH/dockerd.log"; exit 1; }
  say "started dockerd (pid $STARTED_DOCKERD) with no bridge network"
}

build_base() {
  command -v debootstrap >/dev/null 2>&1 || apt-get install -y -qq debootstrap >/dev/null
  local root="$SCRATCH/rootfs"
  say "bootstrapping Debian trixie (minbase) from Debian's packages into $root"
  debootstrap --variant=minbase trixie "$root" http://deb.debian.org/debian > "$SCRATCH/debootstrap.log"
  # as the slim images are: no package lists or caches, no documentation or translations
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/usr/share/doc/* \
         "$root"/usr/share/man/* "$root"/usr/share/info/*
  find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
  mkdir -p "$root/etc/dpkg/dpkg.cfg.d" "$root/usr/local/share/ca-certificates"
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' \
    'path-exclude /usr/share/locale/*' 'path-include /usr/share/locale/locale.alias' \
    > "$root/etc/dpkg/dpkg.cfg.d/slim"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
  tar -C "$root" -c . | docker import --change 'CMD ["bash"]' - "$BASE" >/dev/null
  say "imported $BASE ($(docker image inspect -f '{{.Size}}' "$BASE" | awk '{printf "%.1f MB", $1/1e6}'))"
}

ensure_daemon
if [ "${1:-}" = "--rebuild-base" ] || ! docker image inspect "$BASE" >/dev/null 2>&1; then
  build_base
fi

COMMIT=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
VERSION=$(./dev python -c 'from importlib.metadata import version; print(version("clarify-bot"))')
say "building $IMAGE (commit $COMMIT) on $BASE"
started=$(date +%s)
docker build --network host --build-arg "BASE=$BASE" --build-arg "COMMIT=$COMMIT" \
  --build-arg "VERSION=$VERSION" -t "$IMAGE" . > "$SCRATCH/build.log" 2>&1 \
  || { tail -30 "$SCRATCH/build.log"; exit 1; }
say "built in $(( $(date +%s) - started )) s; size $(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.1f MB", $1/1e6}')"
./dev python scripts/image_smoke.py "$IMAGE"
