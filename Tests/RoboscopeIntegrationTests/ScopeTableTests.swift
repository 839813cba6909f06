import Foundation
import RoboscopeDomain
import Testing

/// The scope of every operation, written once in the code (`OperationScopes`), is what
/// docs/security.md's table says (`roboscope scopes`), what docs/openapi.yaml names per
/// operation (`x-required-scope`), and what `TenancyMatrixTests` enforces per operation.
@Suite struct ScopeTableTests {
    @Test func theDocumentedTableIsTheCodes() async throws {
        try await GeneratedSection.expectCurrent("scopes", in: "docs/security.md", printedBy: "scopes")
    }

    @Test func everyOperationOfTheSpecNamesTheScopeOfTheTable() throws {
        let text = try String(
            contentsOf: TestDatabase.repositoryRoot.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        var named: [String: String] = [:]
        var path: String?
        var method: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
            }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("    "), !line.hasPrefix("     "),
                ["get:", "post:", "put:", "patch:", "delete:"].contains(trimmed)
            {
                method = String(trimmed.dropLast()).uppercased()
            }
            if trimmed.hasPrefix("x-required-scope:"), let path, let method {
                named["\(method) \(path)"] = trimmed.dropFirst("x-required-scope:".count).trimmingCharacters(
                    in: .whitespaces)
            }
        }
        let table = Dictionary(uniqueKeysWithValues: OperationScopes.rest.map { ($0.operation, $0.required) })
        #expect(Set(named.keys) == Set(table.keys), "operations without x-required-scope, or not in the table")
        for (operation, required) in table {
            #expect(
                named[operation] == required,
                "\(operation): the spec says \(named[operation] ?? "nothing"), the code \(required)")
        }
        #expect(Set(OperationScopes.webSocket.map(\.operation)) == Set(ClientRequest.operations))
    }
}
