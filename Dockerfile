# The neardup-solr HTTP service (`neardup-solr serve`) as an image: the package with its `service` extra, run
# by an unprivileged user, pointed at Solr by SOLR_URL. docker-compose.yml runs it next to Solr:
#   docker compose up -d --build solr neardup        # then http://127.0.0.1:8080/docs
# On its own:
#   docker build -t neardup-solr .
#   docker run --rm -p 127.0.0.1:8080:8080 -e SOLR_URL=http://my-solr:8983/solr/neardup neardup-solr

# Build the wheel in a throwaway stage, so the final image holds the installed package and nothing of the tree.
FROM python:3.11.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY neardup_solr ./neardup_solr
COPY solr_config ./solr_config
RUN python -m pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=build /wheels /wheels
RUN python -m pip install "$(ls /wheels/neardup_solr-*.whl)[service]" && rm -rf /wheels \
    && useradd --system --uid 10001 --create-home --home-dir /home/neardup neardup \
    && mkdir -p /var/lib/neardup/jobs && chown neardup /var/lib/neardup/jobs
USER neardup
WORKDIR /home/neardup
# The compose file's Solr; override for your own. Report jobs and uploads go to the jobs directory.
ENV SOLR_URL=http://solr:8983/solr/neardup \
    NEARDUP_SERVICE_JOBS_DIR=/var/lib/neardup/jobs
EXPOSE 8080
# /health answers without Solr or a token: the container is alive. /ready (Solr reachable) is for load balancers.
HEALTHCHECK --interval=10s --timeout=5s --start-period=15s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8080/health', timeout=4).status != 200)"]
# 0.0.0.0 inside the container, so the published port reaches it; compose publishes it on 127.0.0.1 only.
CMD ["neardup-solr", "serve", "--host", "0.0.0.0", "--port", "8080"]
