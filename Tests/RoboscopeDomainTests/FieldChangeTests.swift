import Testing
import RoboscopeDomain

@Suite struct FieldChangeTests {
    let origin: JSONValue = .array([.integer(0), .integer(0), .integer(0)])

    @Test func listsOnlyTheFieldsThatChanged() {
        let before: JSONObject = [
            "label": .string("a"), "p1": origin, "color": .null, "version": .integer(1), "updated_at": .string("t1"),
        ]
        let after: JSONObject = [
            "label": .string("b"), "p1": origin, "color": .string("#FF0000"), "version": .integer(2),
            "updated_at": .string("t2"),
        ]
        #expect(
            FieldChange.between(before, after) == [
                FieldChange(field: "color", before: .null, after: .string("#FF0000")),
                FieldChange(field: "label", before: .string("a"), after: .string("b")),
            ])
    }

    @Test func aCreateListsEveryFieldWithAValueAndADeleteEveryFieldItHad() {
        let state: JSONObject = ["label": .string("a"), "color": .null]
        #expect(FieldChange.between(nil, state) == [FieldChange(field: "label", before: nil, after: .string("a"))])
        #expect(FieldChange.between(state, nil) == [FieldChange(field: "label", before: .string("a"), after: nil)])
    }
}
