extension PGConnection {
    /// Starts noting what each statement the connection runs does, for the span of the
    /// job that runs them (`db.operation`); `endNotingOperations()` stops and returns
    /// them. Only a job whose span records pays for it.
    func startNotingOperations() {
        notedOperations = []
    }

    /// The operations noted since `startNotingOperations()`, each once, in the order they
    /// first ran: `BEGIN, SELECT eventlog.append, INSERT, COMMIT`.
    func endNotingOperations() -> (summary: String, statements: Int) {
        let operations = notedOperations ?? []
        notedOperations = nil
        var seen: Set<String> = []
        let distinct = operations.filter { seen.insert($0).inserted }
        return (distinct.joined(separator: ", "), operations.count)
    }

    /// Optional chaining skips the whole call, the reading of `sql` included, when not noting.
    func note(_ sql: String) {
        notedOperations?.append(Self.operation(of: sql))
    }

    /// A statement's verb, uppercased (`INSERT`, `WITH`, `BEGIN`); for a `SELECT` of a
    /// stored function (`SELECT … FROM eventlog.append($1)`), the function too: the
    /// stored functions are where the service's work happens.
    static func operation(of sql: String) -> String {
        let text = sql.utf8.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\t") }
        let verb = String(decoding: text.prefix { Self.isLetter($0) }, as: UTF8.self).uppercased()
        guard !verb.isEmpty else { return "UNKNOWN" }
        guard verb == "SELECT", let function = Self.firstFunction(in: text.prefix(400)) else { return verb }
        return "SELECT \(function)"
    }

    /// The first `schema.function(` in `text`.
    private static func firstFunction(in text: Substring.UTF8View.SubSequence) -> String? {
        var name: [UInt8] = []
        for byte in text {
            if Self.isLetter(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            {
                name.append(byte)
            } else {
                if byte == UInt8(ascii: "("), name.contains(UInt8(ascii: ".")), name.first != UInt8(ascii: ".") {
                    return String(decoding: name, as: UTF8.self)
                }
                name.removeAll(keepingCapacity: true)
            }
        }
        return nil
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }
}
