/// A point in time with microsecond precision, the precision PostgreSQL keeps.
///
/// Two textual forms exist: the wire form (RFC 3339, UTC, whole seconds) that
/// Foundation's `.iso8601` strategy accepts, and the storage form (RFC 3339, UTC,
/// six fractional digits) used inside the event log.
public struct Timestamp: Hashable, Comparable, Sendable {
    public var microsecondsSinceEpoch: Int64

    public init(microsecondsSinceEpoch: Int64) {
        self.microsecondsSinceEpoch = microsecondsSinceEpoch
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.microsecondsSinceEpoch < rhs.microsecondsSinceEpoch
    }

    /// The whole second it falls in: the precision clients see (the wire form).
    public var wholeSeconds: Int64 {
        let (seconds, _) = Self.floorDivide(microsecondsSinceEpoch, 1_000_000)
        return seconds
    }

    public enum Style: Sendable {
        /// `2026-11-22T01:24:59Z`
        case wire
        /// `2026-11-22T01:24:59.123456Z`
        case storage
    }

    public func formatted(_ style: Style) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(27)
        write(style, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the text of `formatted(style)` to `bytes`: digits written in place, where
    /// building a string of parts cost a dozen allocations a timestamp (every event a
    /// subscriber or a catch-up receives carries at least one).
    public func write(_ style: Style, to bytes: inout [UInt8]) {
        let (seconds, fraction) = Self.floorDivide(microsecondsSinceEpoch, 1_000_000)
        let (days, secondOfDay) = Self.floorDivide(seconds, 86_400)
        let (year, month, day) = Self.civil(fromDays: days)
        if (0...9999).contains(year) {
            Self.appendDigits(year, 4, to: &bytes)
        } else {
            bytes.append(contentsOf: Self.pad(year, 4).utf8)
        }
        bytes.append(UInt8(ascii: "-"))
        Self.appendDigits(month, 2, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        Self.appendDigits(day, 2, to: &bytes)
        bytes.append(UInt8(ascii: "T"))
        Self.appendDigits(secondOfDay / 3600, 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        Self.appendDigits(secondOfDay / 60 % 60, 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        Self.appendDigits(secondOfDay % 60, 2, to: &bytes)
        if style == .storage {
            bytes.append(UInt8(ascii: "."))
            Self.appendDigits(fraction, 6, to: &bytes)
        }
        bytes.append(UInt8(ascii: "Z"))
    }

    /// `value` (not negative, fewer than `width` + 1 digits) in exactly `width` digits.
    private static func appendDigits(_ value: Int64, _ width: Int, to bytes: inout [UInt8]) {
        var divisor: Int64 = 1
        for _ in 1..<width { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            bytes.append(UInt8(48 + rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }

    /// Parses RFC 3339 (`T` or space separator, optional fraction, `Z` or an offset).
    /// Fractions beyond microseconds are truncated.
    public init?(rfc3339 text: String) {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ width: Int) -> Int64? {
            guard index + width <= bytes.count else { return nil }
            var value: Int64 = 0
            for offset in 0..<width {
                let byte = bytes[index + offset]
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int64(byte - 48)
            }
            index += width
            return value
        }
        func expect(_ allowed: [UInt8]) -> Bool {
            guard index < bytes.count, allowed.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect([45]), let month = number(2), expect([45]),
            let day = number(2), expect([84, 116, 32]),
            let hour = number(2), expect([58]), let minute = number(2), expect([58]),
            let second = number(2)
        else { return nil }
        // Year 0000 is RFC 3339 but no time Postgres holds (it has no year zero): a 500
        // wherever a time reached a query, until this refused it.
        guard year >= 1, (1...12).contains(month), day >= 1, day <= Self.daysIn(month: month, year: year),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var micros: Int64 = 0
        if index < bytes.count, bytes[index] == 46 {
            index += 1
            var digits = 0
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                if digits < 6 { micros = micros * 10 + Int64(bytes[index] - 48) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            if digits < 6 {
                for _ in digits..<6 { micros *= 10 }
            }
        }
        var offsetSeconds: Int64 = 0
        if expect([90, 122]) {
            offsetSeconds = 0
        } else if index < bytes.count, bytes[index] == 43 || bytes[index] == 45 {
            let sign: Int64 = bytes[index] == 45 ? -1 : 1
            index += 1
            guard let offsetHour = number(2), expect([58]), let offsetMinute = number(2),
                offsetHour < 24, offsetMinute < 60
            else { return nil }
            offsetSeconds = sign * (offsetHour * 3600 + offsetMinute * 60)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = Self.days(fromCivil: year, month, day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offsetSeconds
        self.microsecondsSinceEpoch = seconds * 1_000_000 + micros
    }

    // Howard Hinnant's civil-from-days algorithms: exact for the proleptic Gregorian calendar.
    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        var quotient = value / divisor
        var remainder = value % divisor
        if remainder < 0 {
            quotient -= 1
            remainder += divisor
        }
        return (quotient, remainder)
    }

    static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}

extension Timestamp: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = Timestamp(rfc3339: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an RFC 3339 time: \(text)")
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        let style = encoder.userInfo[.timestampStyle] as? Style ?? .wire
        try container.encode(formatted(style))
    }
}

extension CodingUserInfoKey {
    /// Selects how `Timestamp` encodes: `Timestamp.Style.wire` (default) or `.storage`.
    public static let timestampStyle = CodingUserInfoKey(rawValue: "roboscope.timestampStyle")!
}
