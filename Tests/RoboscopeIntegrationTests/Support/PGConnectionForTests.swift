import RoboscopePostgres

/// Short reads of a test database.
enum PGConnectionForTests {
    static func query(_ databaseURL: String, _ sql: String, _ parameters: [String?]) throws -> Int64 {
        let result = try TestDatabase.connect(databaseURL).query(sql, parameters)
        guard result.rowCount == 1, let value = result.int64(0, 0) else { throw TestFailure("no integer from \(sql)") }
        return value
    }
}

func scalarText(_ databaseURL: String, _ sql: String, _ parameters: [String?] = []) throws -> String? {
    try TestDatabase.connect(databaseURL).query(sql, parameters).string(0, 0)
}
