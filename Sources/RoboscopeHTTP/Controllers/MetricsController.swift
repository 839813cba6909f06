import Hummingbird
import Prometheus

/// `GET /metrics`: everything recorded through swift-metrics, in Prometheus text format
/// (docs/operations.md lists the series).
struct MetricsController {
    let registry: PrometheusCollectorRegistry

    func addRoutes(to router: Router<RoboscopeRequestContext>) {
        router.get("metrics") { _, _ -> Response in
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(
                status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
    }
}
