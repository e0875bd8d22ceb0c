#!/usr/bin/env bash
# Builds the compose deployment's images from docker/Dockerfile with BuildKit:
# satlab/{postgres,service,box,proxy}:$SATLAB_TAG (the names docker-compose.yml uses).
#
#   docker/build.sh                     all four images; the base image first when it is missing
#   docker/build.sh box proxy           only these targets
# Settings (environment):
#   SATLAB_TAG        latest                       image tag
#   SATLAB_BASE_IMAGE satlab/base:bookworm         the Debian 12 base (scripts/base-image.sh makes
#                                                  it; with a registry: debian:bookworm-slim)
#   SATLAB_EXTRA_CA   (none)                       a CA bundle file for HTTPS behind a re-signing
#                                                  proxy, passed as the BuildKit secret extra_ca
#   DOCKER            /usr/bin/docker              the Docker CLI (Debian's docker.io: it has
#                                                  BuildKit built in; a newer CLI needs buildx)
# Builds use the host's network (--network host): downloads (apt, PyPI, crates.io, npm) work
# without the daemon's NAT, and the running containers have no way out (docker-compose.yml).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export DOCKER="${DOCKER:-/usr/bin/docker}"
TAG="${SATLAB_TAG:-latest}"
BASE="${SATLAB_BASE_IMAGE:-satlab/base:bookworm}"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(postgres service box proxy)

if [ "$BASE" = satlab/base:bookworm ]; then  # ours: made here; any other is pulled
  SATLAB_BASE_IMAGE="$BASE" "$ROOT/scripts/base-image.sh"
fi
secret=()
if [ -n "${SATLAB_EXTRA_CA:-}" ]; then
  [ -r "$SATLAB_EXTRA_CA" ] || { echo "SATLAB_EXTRA_CA: cannot read $SATLAB_EXTRA_CA" >&2; exit 1; }
  secret=(--secret "id=extra_ca,src=$SATLAB_EXTRA_CA")
fi
# The commit the service reports (satlab reproduce groups results by it; the image has no .git).
COMMIT="$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
for target in "${targets[@]}"; do
  t0=$SECONDS
  DOCKER_BUILDKIT=1 "$DOCKER" build --quiet --network host "${secret[@]}" \
    --build-arg "BASE=$BASE" --build-arg "SATLAB_COMMIT=$COMMIT" \
    -f "$ROOT/docker/Dockerfile" --target "$target" \
    -t "satlab/$target:$TAG" "$ROOT" >/dev/null
  echo "    satlab/$target:$TAG ($((SECONDS - t0)) s)"
done
