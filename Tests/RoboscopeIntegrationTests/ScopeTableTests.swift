import Foundation
import RoboscopeDomain
import Testing

/// The scope of every operation, written once in the code (`OperationScopes`), is what
/// docs/security.md's table says (`roboscope scopes`), what docs/openapi.yaml names per
/// operation (`x-required-scope`), and what `TenancyMatrixTests` enforces per operation.
@Suite struct ScopeTableTests {
    @Test func theDocumentedTableIsTheCodes() async throws {
        let printed = try await CommandRunner.roboscope(["scopes"])
        #expect(printed.status == 0)
        let security = try String(
            contentsOf: TestDatabase.repositoryRoot.appendingPathComponent("docs/security.md"), encoding: .utf8)
        guard let begin = security.range(of: "<!-- scopes:begin"), let end = security.range(of: "<!-- scopes:end -->")
        else {
            throw TestFailure("docs/security.md has no scopes markers")
        }
        let section = security[begin.upperBound..<end.lowerBound].split(
            separator: "\n", omittingEmptySubsequences: false
        ).dropFirst()
        #expect(
            section.joined(separator: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
                == printed.output.trimmingCharacters(in: .whitespacesAndNewlines),
            "regenerate the table with `roboscope scopes`")
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
