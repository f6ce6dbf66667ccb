# syntax=docker/dockerfile:1
# One image for every role: `serve --role web` (the default command), `serve --role worker`,
# and `devcore` (the reference core, for trials only). docs/deploy.md explains each.
#
#   docker build -t clarify-bot .
#   docker build --build-arg BASE=clarify-base:trixie -t clarify-bot .   (a base built locally,
#                                                  as scripts/image-smoke.sh does)
#
# The base is Debian 13 (trixie): its python3 is 3.13, and the project needs 3.12 or newer.
ARG BASE=debian:trixie-slim

# ---- build: a virtualenv with the bot and its pinned dependencies -------------------------
FROM ${BASE} AS build
ARG DEBIAN_FRONTEND=noninteractive
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# the dependencies first (a layer that changes only when the pins do), then the project itself
COPY pyproject.toml constraints.txt README.md ./
RUN python3 -m venv /opt/clarify-bot \
 && /opt/clarify-bot/bin/python -c 'import tomllib; deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]; open("/tmp/requirements.txt", "w").write("\n".join(deps) + "\n")' \
 && /opt/clarify-bot/bin/python -m pip install --no-cache-dir --disable-pip-version-check \
      -c constraints.txt -r /tmp/requirements.txt
COPY bot ./bot
COPY cards ./cards
COPY adapters ./adapters
COPY clarify_bot ./clarify_bot
COPY devcore ./devcore
COPY devslack ./devslack
COPY manifest ./manifest
RUN /opt/clarify-bot/bin/python -m pip install --no-cache-dir --disable-pip-version-check \
      -c constraints.txt . \
 && /opt/clarify-bot/bin/python -m pip uninstall -y -q pip \
 && find /opt/clarify-bot -name '__pycache__' -prune -exec rm -rf {} +

# ---- run: Python, tini and CA certificates; no compiler, no pip, no package lists ----------
FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 tini ca-certificates \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log \
 && groupadd --gid 10001 clarify \
 && useradd --no-log-init --uid 10001 --gid clarify --home-dir /var/lib/clarify-bot \
      --create-home --shell /usr/sbin/nologin clarify
COPY --from=build /opt/clarify-bot /opt/clarify-bot
# the image's defaults, read first: a mounted settings file's server.host wins over them
COPY deploy/image/defaults.toml /opt/clarify-bot/defaults.toml
ARG VERSION=0.1.0
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="clarify-bot" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
ENV PATH=/opt/clarify-bot/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    CLARIFY_BOT_COMMIT=${COMMIT} \
    CLARIFY_BOT_DEFAULTS=/opt/clarify-bot/defaults.toml
USER 10001:10001
WORKDIR /var/lib/clarify-bot
EXPOSE 3978
# /healthz of whichever role runs: CLARIFY_HEALTH_PORT names the worker's worker.health_port or
# the reference core's --port (compose.yaml sets it); else the web server's port, as the
# settings' variables or a platform's $PORT give it, else its default
HEALTHCHECK --interval=30s --timeout=3s --start-period=20s --retries=3 \
  CMD ["python3", "-c", "import os, urllib.request as u; e = os.environ.get; u.urlopen('http://127.0.0.1:%s/healthz' % (e('CLARIFY_HEALTH_PORT') or e('CLARIFY_BOT_SERVER__PORT') or e('PORT') or '3978'), timeout=2)"]
ENTRYPOINT ["/usr/bin/tini", "--", "clarify-bot"]
CMD ["serve", "--role", "web"]
