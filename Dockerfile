# syntax=docker/dockerfile:1
# Build:  docker build -t engram .
# Run:    docker run -p 8080:8080 -v engram-data:/data -e ENGRAM_PUBLIC_URL=https://engram.example.com engram
#
# The build stage turns the checkout into a wheel and installs that wheel (not an editable install), so
# the image runs exactly what `pip install engram` gives anyone: the lexicons come as package data.
FROM python:3.11-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/venv
# Dependencies first (cached while only the source changes), then the project itself.
COPY pyproject.toml README.md ./
RUN mkdir engram && touch engram/__init__.py \
    && /opt/venv/bin/pip install . && /opt/venv/bin/pip uninstall -y engram \
    && rm -rf engram build *.egg-info
COPY engram ./engram
COPY lexicons ./lexicons
RUN /opt/venv/bin/pip wheel --no-deps --wheel-dir /dist . \
    && /opt/venv/bin/pip install --no-deps /dist/engram-*.whl \
    && /opt/venv/bin/python -m compileall -q /opt/venv/lib/python3.11/site-packages/engram

FROM python:3.11-slim-bookworm
RUN useradd --system --uid 10001 --home-dir /data engram && mkdir /data && chown engram /data
# Only the virtualenv: no source checkout in the runtime image.
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    ENGRAM_HOST=0.0.0.0 \
    ENGRAM_PORT=8080 \
    ENGRAM_DATA_DIR=/data \
    OMP_NUM_THREADS=1
USER engram
WORKDIR /data
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=3s --start-period=20s --retries=3 \
    CMD python -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:8080/xrpc/_health', timeout=2)" || exit 1
CMD ["engram", "serve"]
