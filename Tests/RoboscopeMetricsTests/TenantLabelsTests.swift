import RoboscopeMetrics
import Testing

/// `--metrics-max-tenants`: the first tenants met keep their own label for good; the rest
/// share `_other`; a request without a verified principal is `_unknown`.
@Suite struct TenantLabelsTests {
    @Test func theFirstTenantsGetTheirNameAndTheRestAreOther() {
        let labels = TenantLabels(limit: 2)
        #expect(labels.label(for: "acme") == "acme")
        #expect(labels.label(for: "globex") == "globex")
        #expect(labels.label(for: "initech") == TenantLabels.other)
        #expect(labels.label(for: "acme") == "acme")
        #expect(labels.label(for: "") == TenantLabels.unknown)
        #expect(labels.namedCount == 2)
    }

    @Test func aLowerLimitKeepsTheNamesGivenAndARaisedOneNamesMore() {
        let labels = TenantLabels(limit: 1)
        #expect(labels.label(for: "acme") == "acme")
        labels.setLimit(0)
        #expect(labels.label(for: "acme") == "acme")
        #expect(labels.label(for: "globex") == TenantLabels.other)
        labels.setLimit(3)
        #expect(labels.label(for: "globex") == "globex")
    }

    @Test func outcomesFollowTheStatus() {
        let cases: [(Int, TenantMetrics.Outcome)] = [
            (200, .ok), (304, .ok), (400, .clientError), (401, .unauthorized), (403, .forbidden), (404, .clientError),
            (429, .rateLimited), (499, .clientError), (500, .serverError), (503, .serverError),
        ]
        for (status, outcome) in cases { #expect(TenantMetrics.Outcome(status: status) == outcome) }
    }
}
