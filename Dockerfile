# One image for every muster service: `docker run IMAGE services.<name>`
# (the entrypoint is `python -m`), or `--entrypoint muster` for the CLI.
# Built by docker-compose.yml; tagged ghcr.io/muster-sched/muster:0.1.0 for deploy/k8s.

FROM python:3.11-slim AS build
WORKDIR /src
# README.m[d]: copied when present (pyproject names it), without failing when not.
COPY pyproject.toml README.m[d] ./
COPY libs ./libs
COPY services ./services
RUN pip install --no-cache-dir --root-user-action=ignore --prefix=/install .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MUSTER_HOME=/tmp/muster \
    NUMBA_CACHE_DIR=/tmp/numba-cache \
    MUSTER_HTTP_PORT=8080
RUN groupadd --system --gid 10001 muster \
 && useradd --system --uid 10001 --gid muster --no-create-home --home-dir /nonexistent muster
COPY --from=build /install /usr/local
# Numeric, so Kubernetes can check runAsNonRoot without resolving the name.
USER 10001:10001
WORKDIR /tmp
EXPOSE 8080
ENTRYPOINT ["python", "-m"]
CMD ["services.projector"]
