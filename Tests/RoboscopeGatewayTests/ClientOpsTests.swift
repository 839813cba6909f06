@testable import RoboscopeGateway
import RoboscopeDomain
import Testing
import WebSocketCodec

@Suite struct ClientOpsTests {
    func route(_ text: String, opcode: Opcode = .text, authenticated: Bool) -> ClientOps.Route {
        ClientOps.route(opcode, Array(text.utf8), authenticated: authenticated)
    }

    func served(_ route: ClientOps.Route) -> ClientRequest? {
        if case .serve(let request) = route { return request }
        return nil
    }

    func closed(_ route: ClientOps.Route) -> CloseCode? {
        if case .close(let code, _) = route { return code }
        return nil
    }

    func error(_ route: ClientOps.Route) -> DomainError? {
        if case .reply(let error) = route { return error }
        return nil
    }

    @Test func anAuthenticatedConnectionsOpsAreServedAndItsMistakesAnswered() {
        let subscribe = served(
            route(#"{"op":"subscribe","topic":"space:1b6c7f1e-2c1a-4c51-9a57-3f0a5a8e4b11"}"#, authenticated: true))
        guard case .subscribe? = subscribe else { Issue.record("expected a subscribe"); return }
        #expect(error(route(#"{"op":"dance"}"#, authenticated: true)) != nil)
        #expect(error(route("not json", authenticated: true))?.code == .malformedRequest)
        #expect(
            error(route("{}", opcode: .binary, authenticated: true))?.code == .malformedRequest,
            "binary frames get an error")
    }

    @Test func beforeAuthenticationOnlyAuthIsServedAndAnythingElseCloses4001() {
        guard case .auth("t")? = served(route(#"{"op":"auth","token":"t"}"#, authenticated: false)) else {
            Issue.record("auth is served before authentication"); return
        }
        #expect(
            closed(
                route(#"{"op":"subscribe","topic":"space:1b6c7f1e-2c1a-4c51-9a57-3f0a5a8e4b11"}"#, authenticated: false)
            ) == .unauthorized)
        #expect(
            closed(route("not json", authenticated: false)) == .unauthorized,
            "no error answers leak before authentication")
        #expect(closed(route("{}", opcode: .binary, authenticated: false)) == .unauthorized)
    }
}
