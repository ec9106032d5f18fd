"""The OTLP/gRPC receiver: the trace, logs and metrics services generated in `opentelemetry-proto`,
served by grpc.aio. Each `Export` hands its decoded request to the service as the HTTP receiver
does; a full judge queue answers `UNAVAILABLE` with a `RetryInfo` (which OTLP exporters retry after
its delay). A message past `max_request_bytes` once decompressed is refused by gRPC itself
(`RESOURCE_EXHAUSTED`), as is a call past `max_connections` at once; handshakes, idle connections
and each connection's age are bounded by grpc core's own options (`connections.grpc_options`). With
a token, a call without it ends `UNAUTHENTICATED`; with TLS files, the port is served over TLS only.
Decoding a request into spans runs on the service's decoding threads, as for HTTP."""

from __future__ import annotations

from typing import Any

import grpc
from google.rpc import error_details_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from .access import TokenInterceptor
from .connections import grpc_options
from .intake import RETRY_AFTER_S, Intake
from .judge import QueueFull
from .options import Address


_RETRY_INFO = (("google.rpc.retryinfo-bin", error_details_pb2.RetryInfo(
    retry_delay={"seconds": RETRY_AFTER_S}).SerializeToString()),)


def _servicer(base: type, signal: str, service: Intake) -> Any:
    class Servicer(base):
        async def Export(self, request: Any, context: grpc.aio.ServicerContext) -> Any:  # noqa: N802 - generated name
            try:
                return await service.off_loop(service.accept_message, signal, request)
            except QueueFull as error:
                service.refused("busy")
                await context.abort(grpc.StatusCode.UNAVAILABLE, f"busy: {error}", _RETRY_INFO)
            except Exception:  # a bug in otelguard: counted and logged
                service.containment.record_and_maybe_raise("service.receive")
                await context.abort(grpc.StatusCode.INTERNAL, "internal error in otelguard (logged)")

    return Servicer()


async def grpc_server(service: Intake, address: Address) -> tuple[grpc.aio.Server, Address]:
    """A started grpc.aio server on `address` (port 0: any free port); raises OSError when it cannot bind."""
    options = service.options
    limit = options.max_request_bytes
    server = grpc.aio.server(
        interceptors=[TokenInterceptor(options.token, service.refused)] if options.token is not None else None,
        options=[("grpc.max_receive_message_length", limit), *grpc_options(options.deadlines)],
        maximum_concurrent_rpcs=options.max_connections)
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(
        _servicer(trace_service_pb2_grpc.TraceServiceServicer, "traces", service), server)
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(
        _servicer(logs_service_pb2_grpc.LogsServiceServicer, "logs", service), server)
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(
        _servicer(metrics_service_pb2_grpc.MetricsServiceServicer, "metrics", service), server)
    host, port = address
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        bound = (server.add_secure_port(target, options.tls.grpc_credentials()) if options.tls is not None
                 else server.add_insecure_port(target))
    except RuntimeError as error:
        raise OSError(f"cannot listen on {target}: {error}") from None
    if not bound:
        raise OSError(f"cannot listen on {target}")
    await server.start()
    return server, (host, bound)
