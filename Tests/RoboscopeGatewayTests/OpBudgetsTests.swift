@testable import RoboscopeGateway
import RoboscopeAuth
import RoboscopeDomain
import Testing

@Suite struct OpBudgetsTests {
    func budgets(authenticated: Bool, configure: (inout GatewayConfiguration) -> Void = { _ in }) -> OpBudgets {
        var configuration = GatewayConfiguration()
        configuration.opRate = 1
        configuration.opBurst = 2
        configuration.subjectOpRate = 1
        configuration.subjectOpBurst = 3
        configuration.tenantOpRate = 2
        if authenticated { configuration.authentication = TokenVerifier(keys: VerificationKeys()) }
        configure(&configuration)
        return OpBudgets(configuration: configuration)
    }

    func principal(_ subject: String, _ tenant: String = "acme") -> Principal {
        Principal(subject: subject, tenant: tenant, scopes: Scopes([.read]))
    }

    func limit(_ error: DomainError?) -> String? {
        guard let error, error.code == .rateLimited else { return nil }
        if case .string(let limit)? = error.details["limit"] { return limit }
        return "?"
    }

    @Test func aConnectionHasItsBurstThenWaitsForItsRate() {
        let budgets = budgets(authenticated: false)
        var bucket = TokenBucket(rate: 1, burst: 2, now: 0)
        #expect(budgets.take(&bucket, principal: nil, now: 0) == nil)
        #expect(budgets.take(&bucket, principal: nil, now: 0) == nil)
        let refused = budgets.take(&bucket, principal: nil, now: 0)
        #expect(limit(refused) == "connection")
        #expect(refused?.details["retry_after"] == .integer(1))
        #expect(budgets.take(&bucket, principal: nil, now: 1) == nil, "a second later, one more")
    }

    @Test func aSubjectsConnectionsShareItsBudgetAndAnotherSubjectIsNotConcerned() {
        let budgets = budgets(authenticated: true) { $0.opBurst = 100 }
        var buckets = (0..<4).map { _ in TokenBucket(rate: 1, burst: 100, now: 0) }
        let ana = principal("ana")
        // Three ops over three connections: the subject's burst.
        for index in 0..<3 { #expect(budgets.take(&buckets[index], principal: ana, now: 0) == nil) }
        #expect(limit(budgets.take(&buckets[3], principal: ana, now: 0)) == "subject")
        #expect(budgets.take(&buckets[3], principal: principal("bo", "globex"), now: 0) == nil)
    }

    @Test func aTenantsSubjectsShareItsBudget() {
        let budgets = budgets(authenticated: true) {
            $0.opBurst = 100; $0.subjectOpBurst = 100
        }
        var bucket = TokenBucket(rate: 100, burst: 100, now: 0)
        // The tenant's burst is twice its rate: four ops.
        for subject in ["a", "b", "c", "d"] {
            #expect(budgets.take(&bucket, principal: principal(subject), now: 0) == nil)
        }
        #expect(limit(budgets.take(&bucket, principal: principal("e"), now: 0)) == "tenant")
        #expect(budgets.take(&bucket, principal: principal("f", "globex"), now: 0) == nil)
    }

    @Test func withoutAuthenticationOnlyTheConnectionCounts() {
        let budgets = budgets(authenticated: false) { $0.opBurst = 100 }
        var bucket = TokenBucket(rate: 100, burst: 100, now: 0)
        for _ in 0..<10 { #expect(budgets.take(&bucket, principal: principal("anonymous"), now: 0) == nil) }
    }

    @Test func aCatchUpIsChargedAnOpPerHundredEventsIntoDebt() {
        let budgets = budgets(authenticated: true) { $0.subjectOpBurst = 100 }
        var bucket = TokenBucket(rate: 1, burst: 2, now: 0)
        let ana = principal("ana")
        budgets.charge(&bucket, principal: ana, catchUpEvents: 1000, now: 0)
        let refused = budgets.take(&bucket, principal: ana, now: 0)
        #expect(limit(refused) == "connection")
        #expect(
            (refused.flatMap {
                if case .integer(let wait)? = $0.details["retry_after"] { return wait } else { return nil }
            } ?? 0) >= 8,
            "ten ops charged against a burst of two")
    }
}
