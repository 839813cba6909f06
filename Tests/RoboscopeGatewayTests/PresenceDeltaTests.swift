@testable import RoboscopeGateway
import Testing

@Suite struct PresenceDeltaTests {
    @Test func joinsAndLeavesWithinATurnAreNetted() {
        var delta = PresenceDelta()
        delta.apply(#"{"event":"join","user_id":"ana"}"#)
        delta.apply(#"{"event":"leave","user_id":"bo","reason":"expired"}"#)
        delta.apply(#"{"event":"join","user_id":"cy"}"#)
        delta.apply(#"{"event":"leave","user_id":"cy","reason":"left"}"#)
        delta.apply(#"{"event":"join","user_id":"bo"}"#)
        delta.apply(#"{"event":"join","user_id":"ana"}"#)
        #expect(delta.joined == ["ana"], "cy came and went; ana once")
        #expect(delta.left.isEmpty, "bo left and came back")
        delta.apply(#"{"event":"leave","user_id":"dee"}"#)
        #expect(delta.left == ["dee"])
    }

    @Test func payloadsThatAreNotEventsAreIgnored() {
        var delta = PresenceDelta()
        for payload in ["", "not json", "[]", #"{"event":"wave","user_id":"x"}"#, #"{"event":"join"}"#] {
            delta.apply(payload)
        }
        #expect(delta.isEmpty)
    }
}
