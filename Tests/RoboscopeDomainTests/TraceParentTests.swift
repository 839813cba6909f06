import RoboscopeDomain
import Testing

/// W3C Trace Context's `traceparent`: only a well-formed version-00 header names a trace.
@Suite struct TraceParentTests {
    @Test func aWellFormedHeaderNamesItsTrace() {
        #expect(
            TraceParent.traceID("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
                == "4bf92f3577b34da6a3ce929d0e0e4736")
    }

    @Test(arguments: [
        "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
    ])
    func anythingElseNamesNone(header: String) {
        #expect(TraceParent.traceID(header) == nil)
    }
}
