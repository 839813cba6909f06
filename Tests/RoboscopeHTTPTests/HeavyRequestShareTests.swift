import HTTPTypes
import Hummingbird
import Synchronization
import Testing
@testable import RoboscopeHTTP

/// Heavy requests of one tenant at once (issue 45, the fairshare benchmark): past its
/// share a tenant's heavy request waits in the tenant's line, another tenant's starts at
/// once, a full line refuses, and only requests whose cost grows with the data count.
@Suite struct HeavyRequestShareTests {
    static func request(_ method: HTTPRequest.Method, _ path: String) -> Request {
        Request(
            head: HTTPRequest(method: method, scheme: "http", authority: "localhost", path: path),
            body: RequestBody(buffer: ByteBuffer()))
    }

    @Test func heavyAreTheRequestsWhoseCostGrowsWithTheData() {
        let heavy = [
            (HTTPRequest.Method.get, "/api/v1/markers?work_session_id=x"),
            (.get, "/api/v1/markers?work_session_id=x&limit=5000"),
            (.get, "/api/v1/spaces"),
            (.get, "/api/v1/markers?work_session_id=x&as_of=2026-11-27T00:00:00Z&limit=10"),
            (.get, "/api/v1/audit?limit=10"),
            (.get, "/api/v1/markers/x/history"),
            (.get, "/api/v1/integrity?work_session_id=x"),
            (.post, "/api/v1/markers/bulk"),
        ]
        let light = [
            (HTTPRequest.Method.get, "/api/v1/markers?work_session_id=x&limit=50"),
            (.get, "/api/v1/markers/x"),
            (.get, "/api/v1/spaces/x"),
            (.post, "/api/v1/markers"),
            (.get, "/api/v1/changes?topic=work_session:x&since=0"),
        ]
        for (method, path) in heavy { #expect(HeavyRequestShare.isHeavy(Self.request(method, path)), "\(path)") }
        for (method, path) in light { #expect(!HeavyRequestShare.isHeavy(Self.request(method, path)), "\(path)") }
    }

    @Test func aTenantAtItsShareWaitsItsTurnAndAnotherTenantStartsAtOnce() async throws {
        let share = HeavyRequestShare(perTenant: 1, maxWaiting: 1)
        #expect(await share.enter("acme"))
        let order = Mutex<[String]>([])
        let second = Task {
            let admitted = await share.enter("acme")
            order.withLock { $0.append("acme") }
            return admitted
        }
        while share.waiting < 1 { await Task.yield() }
        #expect(!(await share.enter("acme")), "acme's line holds one at most")
        #expect(await share.enter("globex"), "another tenant starts at once")
        order.withLock { $0.append("globex") }
        share.leave("acme")
        #expect(await second.value, "acme's next request starts when its first is done")
        #expect(order.withLock { $0 } == ["globex", "acme"])
        share.leave("acme")
        share.leave("globex")
        #expect(share.waiting == 0)
    }
}
