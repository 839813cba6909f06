import RoboscopeWire
import Testing

/// W3C Trace Context's `traceparent`: a well-formed header names a trace and its parent
/// span; a later version is read by its first four fields; anything else names none.
@Suite struct TraceParentTests {
    @Test func aWellFormedHeaderNamesItsTraceAndParent() throws {
        let parent = try #require(TraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        #expect(parent.traceID == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(parent.parentID == "00f067aa0ba902b7")
        #expect(parent.sampled)
        #expect(parent.header == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        #expect(TraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")?.sampled == false)
    }

    @Test func aLaterVersionIsReadByItsFirstFourFields() {
        #expect(
            TraceParent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-later")?.header
                == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        #expect(TraceParent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") != nil)
    }

    @Test(arguments: [
        "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01extra",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
    ])
    func anythingElseNamesNone(header: String) {
        #expect(TraceParent(header) == nil)
        #expect(TraceParent.traceID(header) == nil)
    }

    @Test func aNewTraceIsWellFormedAndItsOwn() throws {
        let first = TraceParent.random()
        let second = TraceParent.random()
        #expect(TraceParent(first.header) == first)
        #expect(first.traceID != second.traceID)
        #expect(first.sampled)
        #expect(!TraceParent.random(sampled: false).sampled)
    }
}
