import Foundation
import Testing

/// docs/operations.md's configuration reference is what `roboscope settings` prints from
/// the declarations the flags are parsed with.
@Suite struct SettingsReferenceTests {
    @Test func theReferenceIsTheDeclaredSettings() async throws {
        try await GeneratedSection.expectCurrent("settings", in: "docs/operations.md", printedBy: "settings")
    }
}
