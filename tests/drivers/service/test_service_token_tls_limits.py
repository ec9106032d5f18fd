"""`otelguard serve` safe to expose: a bearer token on every route (HTTP and gRPC), TLS on every
listener (a self-signed certificate made here), and requests bounded after decompression (a gzip
bomb included). The OTel SDK's own exporters carry the token over TLS. A token no header can carry
is refused at start, and a listener beyond loopback without a token is warned about."""

from __future__ import annotations

import gzip
import http.client
import re
import ssl
import urllib.error
import urllib.request
from collections import Counter

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from prometheus_client.parser import text_string_to_metric_families

from otelguard.cli import main
from service_support import COUNTING, REMIND, post, running_service, send_with, serve_command, stopped
from tls_support import SelfSigned, self_signed

TOKEN = "s3cret-token"
BEARER = {"authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> SelfSigned:
    return self_signed(tmp_path_factory.mktemp("tls"))


def _get(url: str, certificate: SelfSigned, headers: dict[str, str]) -> tuple[int, str]:
    context = ssl.create_default_context(cafile=str(certificate.cert))
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5, context=context) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _refusals(service, certificate: SelfSigned) -> dict[str, float]:
    status, text = _get(service.metrics_url, certificate, {"Authorization": f"Bearer {TOKEN}"})
    assert status == 200
    return {sample.labels["reason"]: sample.value for family in text_string_to_metric_families(text)
            if family.name == "otelguard_service_refused_requests" for sample in family.samples
            if sample.name.endswith("_total")}


def _verdicts(service, certificate: SelfSigned, sender: str) -> Counter:
    status, text = _get(service.metrics_url, certificate, {"Authorization": f"Bearer {TOKEN}"})
    assert status == 200
    return Counter({(s.labels["otelguard_guard"], s.labels["otelguard_rule"], s.labels["otelguard_action"]): int(s.value)
                    for family in text_string_to_metric_families(text) if family.name == "otelguard_verdicts"
                    for s in family.samples if s.name.endswith("_total") and s.value
                    and s.labels.get("service_name") == sender})


def _tls_service(certificate: SelfSigned):
    from otelguard.service.access import TlsFiles

    return running_service(grpc=True, token=TOKEN, tls=TlsFiles(str(certificate.cert), str(certificate.key)))


def test_sdk_exporters_with_the_token_over_tls_are_judged(certificate, monkeypatch) -> None:
    """HTTP (gzip'd protobuf) and gRPC exporters with the CA and the bearer token: their spans are
    judged; the metrics endpoint asks for the token too."""
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):  # requests lets these override the exporter's CA file
        monkeypatch.delenv(name, raising=False)
    with _tls_service(certificate) as service:
        assert service.http_url.startswith("https://")
        send_with(HttpSpanExporter(endpoint=service.http_url + "/v1/traces", certificate_file=str(certificate.cert),
                                   headers=BEARER, compression=Compression.Gzip), "https-agent")
        credentials = grpc.ssl_channel_credentials(root_certificates=certificate.pem())
        send_with(GrpcSpanExporter(endpoint=service.grpc_target, credentials=credentials, headers=BEARER),
                  "grpcs-agent")
        assert service.flush()
        assert _verdicts(service, certificate, "https-agent") == Counter({REMIND: 2, COUNTING: 2})
        assert _verdicts(service, certificate, "grpcs-agent") == Counter({REMIND: 2, COUNTING: 2})
        assert _get(service.metrics_url, certificate, {})[0] == 401


def test_without_the_token_nothing_is_taken(certificate) -> None:
    with _tls_service(certificate) as service:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
            request = urllib.request.Request(service.http_url + "/v1/traces", data=b"", method="POST",
                                             headers={"Content-Type": "application/x-protobuf", **headers})
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=5,
                                       context=ssl.create_default_context(cafile=str(certificate.cert)))
            assert refused.value.code == 401
            assert refused.value.headers["WWW-Authenticate"] == "Bearer"
            refused.value.close()
        credentials = grpc.ssl_channel_credentials(root_certificates=certificate.pem())
        with grpc.secure_channel(service.grpc_target, credentials) as channel:
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)
            for metadata in ((), (("authorization", "Bearer wrong"),)):
                with pytest.raises(grpc.RpcError) as denied:
                    stub.Export(ExportTraceServiceRequest(), metadata=metadata, timeout=5)
                assert denied.value.code() == grpc.StatusCode.UNAUTHENTICATED
            stub.Export(ExportTraceServiceRequest(), metadata=tuple(BEARER.items()), timeout=5)
        # A plain-text client gets no answer from a TLS port.
        with grpc.insecure_channel(service.grpc_target) as channel:
            with pytest.raises(grpc.RpcError):
                trace_service_pb2_grpc.TraceServiceStub(channel).Export(
                    ExportTraceServiceRequest(), metadata=tuple(BEARER.items()), timeout=2)
        assert _refusals(service, certificate)["unauthenticated"] == 5
        assert service.judge.received == 0


def _request_of(size: int) -> bytes:
    """A trace request whose one span carries an attribute of `size` bytes."""
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add(
        trace_id=b"\1" * 16, span_id=b"\2" * 8, name="execute_tool lookup", start_time_unix_nano=1,
        end_time_unix_nano=2)
    span.attributes.append(KeyValue(key="gen_ai.tool.call.arguments", value=AnyValue(string_value="a" * size)))
    return request.SerializeToString()


LIMIT = 64 * 1024


def test_requests_past_the_limit_are_refused_after_decompression() -> None:
    with running_service(grpc=True, max_request_bytes=LIMIT) as service:
        assert post(service, "/v1/traces", _request_of(LIMIT // 2))[0] == 200
        assert post(service, "/v1/traces", gzip.compress(_request_of(LIMIT // 2)), **{"Content-Encoding": "gzip"})[0] == 200
        assert post(service, "/v1/traces", _request_of(LIMIT))[0] == 413
        # A gzip bomb: 16 KiB on the wire, 16 MiB inflated; refused once LIMIT is passed.
        bomb = gzip.compress(b"\0" * (16 * 1024 * 1024), compresslevel=9)
        assert len(bomb) < LIMIT
        status, _, _ = post(service, "/v1/traces", bomb, **{"Content-Encoding": "gzip"})
        assert status == 413
        small_then_big = gzip.compress(_request_of(100)) + gzip.compress(b"\0" * (2 * LIMIT))
        assert post(service, "/v1/traces", small_then_big, **{"Content-Encoding": "gzip"})[0] == 413
        with grpc.insecure_channel(service.grpc_target) as channel:
            export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
            export(_request_of(LIMIT // 2), timeout=5)
            for compression in (grpc.Compression.NoCompression, grpc.Compression.Gzip):
                with pytest.raises(grpc.RpcError) as refused:
                    export(_request_of(2 * LIMIT), timeout=5, compression=compression)
                assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert service.flush()
        assert service.judge.received == 3


def test_the_default_limit_is_twenty_mebibytes() -> None:
    """Just under 20 MiB is taken; a body announced past it is answered 413 before it is read."""
    mib20 = 20 * 1024 * 1024
    with running_service() as service:
        assert post(service, "/v1/traces", _request_of(mib20 - 1000))[0] == 200
        host, port = service.http_address
        connection = http.client.HTTPConnection(host, port, timeout=5)
        connection.putrequest("POST", "/v1/traces")
        connection.putheader("Content-Type", "application/x-protobuf")
        connection.putheader("Content-Length", str(mib20 + 1))
        connection.endheaders(b"\0" * 1024)
        assert connection.getresponse().status == 413
        connection.close()


def test_serve_command_takes_the_token_file_and_tls_files(certificate, tmp_path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    with serve_command("--http", "127.0.0.1:0", "--grpc", "off", "--metrics", "off", "--token-file", str(token_file),
                       "--tls-cert", str(certificate.cert), "--tls-key", str(certificate.key),
                       "--max-request-bytes", "1000", "--queue", "4") as (process, first):
        url = re.search(r"OTLP/HTTP (https://[0-9.:]+)", first)
        assert url and "bearer token required" in first, first
        context = ssl.create_default_context(cafile=str(certificate.cert))
        statuses = []
        for body, headers in ((b"", {}), (b"", BEARER), (b"\0" * 1001, BEARER)):
            request = urllib.request.Request(url.group(1) + "/v1/traces", data=body, method="POST",
                                             headers={"Content-Type": "application/x-protobuf", **headers})
            try:
                with urllib.request.urlopen(request, timeout=5, context=context) as answer:
                    statuses.append(answer.status)
            except urllib.error.HTTPError as error:
                statuses.append(error.code)
                error.close()
        assert statuses == [401, 200, 413]
        out, err = stopped(process)
    assert process.returncode == 0, err


def test_serve_refuses_tls_files_that_do_not_match(certificate, tmp_path, capsys) -> None:
    other = self_signed(tmp_path)
    assert main(["serve", "--http", "127.0.0.1:0", "--grpc", "off", "--metrics", "off",
                 "--tls-cert", str(certificate.cert), "--tls-key", str(other.key)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("otelguard serve: error: --tls-cert") and err.count("\n") == 1, err


@pytest.mark.timeout(20)  # (a serve that took the token would run until stopped)
@pytest.mark.parametrize("token", ["tökén", "token\x07bell"])
def test_serve_refuses_a_token_no_request_can_carry(token: str, tmp_path, capsys) -> None:
    """A header carries printable ASCII: a token with anything else could never authenticate."""
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n", encoding="utf-8")
    assert main(["serve", "--http", "127.0.0.1:0", "--grpc", "off", "--metrics", "off",
                 "--token-file", str(token_file)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("otelguard serve: error: --token-file") and "printable ASCII" in err, err
    assert err.count("\n") == 1


UNROUTABLE = "192.0.2.1:4318"  # TEST-NET-1: not loopback, and no address of this machine (cannot be bound)


@pytest.mark.parametrize("listener", ["--http", "--grpc", "--metrics"])
def test_serve_warns_of_a_listener_beyond_loopback_without_a_token(listener: str, tmp_path, capsys) -> None:
    addresses = {"--http": "127.0.0.1:0", "--grpc": "off", "--metrics": "off", listener: UNROUTABLE}
    assert main(["serve", *(item for pair in addresses.items() for item in pair)]) == 2
    warning, error = capsys.readouterr().err.splitlines()
    assert warning.startswith(f"otelguard serve: warning: without --token-file, anyone who can reach {listener} "
                              f"{UNROUTABLE} can send spans")
    assert error.startswith("otelguard serve: error: cannot listen")
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    assert main(["serve", *(item for pair in addresses.items() for item in pair), "--token-file", str(token_file)]) == 2
    assert "warning" not in capsys.readouterr().err
