import Testing
import RoboscopeDomain

/// Rules 2 and 3 of docs/security.md on the principal alone, and what a refreshed token
/// takes away.
@Suite struct PrincipalTests {
    let hull = EntityID("6f1c0000-0000-4000-8000-000000000001")!
    let yard = EntityID("6f1c0000-0000-4000-8000-000000000002")!

    func principal(_ scopes: [Scope], spaces: Set<EntityID>? = nil, tenant: String = "acme") -> Principal {
        Principal(subject: "fitter-1", tenant: tenant, scopes: Scopes(scopes), spaces: spaces)
    }

    @Test func anotherTenantsPlaceAndASpaceOutsideSpacesAreUnseen() {
        #expect(principal([.read]).sees(Place(spaceID: hull, tenant: "acme")))
        #expect(!principal([.read]).sees(Place(spaceID: hull, tenant: "globex")))
        #expect(principal([.read], spaces: [hull]).sees(Place(spaceID: hull, tenant: "acme")))
        #expect(!principal([.read], spaces: [hull]).sees(Place(spaceID: yard, tenant: "acme")))
        #expect(!principal([.read], spaces: [hull], tenant: "globex").sees(Place(spaceID: hull, tenant: "acme")))
    }

    /// The gateway's checks without an answer to send (a refreshed token's withdrawals)
    /// are the same check as `require`'s.
    @Test func mayIsRequireWithoutTheError() {
        let acme = Place(spaceID: hull, tenant: "acme")
        #expect(principal([.read]).may(.read, in: acme))
        #expect(!principal([.read]).may(.write, in: acme))
        #expect(!principal([.admin]).may(.read, in: nil), "a place that does not exist")
        #expect(!principal([.admin]).may(.read, in: Place(spaceID: hull, tenant: "globex")))
        #expect(!principal([.admin], spaces: [yard]).may(.read, in: acme))
    }

    @Test func visibilityComesBeforeTheScope() throws {
        let unknown = DomainError(.notFound, "not found")
        let unseen = #expect(throws: DomainError.self) {
            try principal([.operator]).require(.read, in: Place(spaceID: hull, tenant: "globex"), otherwise: unknown)
        }
        #expect(unseen?.code == .notFound)
        let forbidden = #expect(throws: DomainError.self) {
            try principal([.operator]).require(.read, in: Place(spaceID: hull, tenant: "acme"), otherwise: unknown)
        }
        #expect(forbidden?.code == .forbidden)
        #expect(forbidden?.details["scope_needed"] == .string("read"))
        try principal([.admin]).require(.write, in: Place(spaceID: hull, tenant: "acme"), otherwise: unknown)
    }

    @Test func aRefreshNarrowsWhenItLosesAScopeOrASpace() {
        let wide = principal([.write], spaces: [hull, yard])
        #expect(!principal([.write], spaces: [hull, yard]).narrows(wide), "the same")
        #expect(!principal([.admin], spaces: nil).narrows(wide), "more scopes, every space")
        #expect(principal([.read], spaces: [hull, yard]).narrows(wide), "write lost")
        #expect(principal([.write], spaces: [hull]).narrows(wide), "yard lost")
        #expect(principal([.write], spaces: [hull]).narrows(principal([.write])), "every space, then one")
        #expect(!principal([.write]).narrows(principal([.write], spaces: [hull])), "one space, then every one")
    }
}
