import RoboscopeWire
import Testing

/// Header values read as HTTP reads them: only spaces and tabs around a value are optional
/// white space (RFC 9110 §5.6.3), and tokens such as media types and codings compare with
/// ASCII letters folded (§8.3.1, §8.4.1).
@Suite struct HeaderTextTests {
    @Test func trimsSpacesAndTabsOnly() {
        #expect(HeaderText.trimmed(" \t application/json \t") == "application/json")
        #expect(HeaderText.trimmed("gzip") == "gzip")
        #expect(HeaderText.trimmed("   ") == "")
        #expect(HeaderText.trimmed("") == "")
        #expect(HeaderText.trimmed(" a b ") == "a b")
        // A line break is not optional white space: it stays, and the value is refused later.
        #expect(HeaderText.trimmed("\ngzip") == "\ngzip")
        #expect(HeaderText.trimmed(" x"[...]) == "x")
    }

    @Test func comparesTokensWithASCIILettersFolded() {
        #expect(HeaderText.equalsIgnoringCase("Application/JSON", "application/json"))
        #expect(HeaderText.equalsIgnoringCase("BEARER", "bearer"))
        #expect(HeaderText.equalsIgnoringCase("gzip", "gzip"))
        #expect(!HeaderText.equalsIgnoringCase("application/jsonx", "application/json"))
        #expect(!HeaderText.equalsIgnoringCase("application/jso", "application/json"))
        #expect(!HeaderText.equalsIgnoringCase("", "gzip"))
        // Only ASCII letters fold: `[` (0x5B) is not `{` (0x7B), nor a Kelvin sign a `k`.
        #expect(!HeaderText.equalsIgnoringCase("[", "{"))
        #expect(!HeaderText.equalsIgnoringCase("\u{212A}", "k"))
        #expect(HeaderText.equalsIgnoringCase("X-GZip"[...], "x-gzip"))
    }

    @Test func findsPrefixesWithASCIILettersFolded() {
        #expect(HeaderText.hasPrefixIgnoringCase("Application/JSON; charset=utf-8", "application/json"))
        #expect(HeaderText.hasPrefixIgnoringCase("TEXT/html", "text/"))
        #expect(!HeaderText.hasPrefixIgnoringCase("text", "text/"))
        #expect(!HeaderText.hasPrefixIgnoringCase("image/png", "image/svg+xml"))
    }

    @Test func lowercasesASCIILettersOnly() {
        #expect(HeaderText.lowercased(" GZip ") == " gzip ")
        #expect(HeaderText.lowercased("Ä-X") == "Ä-x")
    }
}
