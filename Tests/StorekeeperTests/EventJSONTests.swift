import Foundation
import Storekeeper
import TestSupport
import Testing

/// `Event.jsonData()` must write exactly the bytes of `EventWriter.encoder`: event bodies are
/// stored, signed over and delivered.
@Suite struct EventJSONTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000.25)

    /// Records an issue, showing both texts, unless `jsonData()` writes EventWriter's bytes.
    @discardableResult
    static func expectSameBytes(
        _ event: Event, _ context: @autoclosure () -> String = "", sourceLocation: SourceLocation = #_sourceLocation
    ) -> Bool {
        JSONWriterReference.expectSameBytes(event, context(), sourceLocation: sourceLocation) { try $0.jsonData() }
    }

    /// An entitlement with every field set; EntitlementView has no public initializer but its
    /// fields are vars.
    static let entitlementTemplate: EntitlementView = {
        let json = """
            {"active":true,"expiresAt":800000000,"name":"pro","productID":"monthly","purchaseID":"1000",\
            "state":"active","store":"app_store"}
            """
        do {
            return try JSONDecoder().decode(EntitlementView.self, from: Data(json.utf8))
        } catch {
            fatalError("the entitlement template does not decode: \(error)")
        }
    }()

    static func entitlement(
        _ name: String, active: Bool = true, expiresAt: Date? = start.addingTimeInterval(86_400),
        productID: String = "monthly", store: Store = .appStore, purchaseID: String = "2000000000000001",
        state: SubscriptionState = .active
    ) -> EntitlementView {
        var view = entitlementTemplate
        view.name = name
        view.active = active
        view.expiresAt = expiresAt
        view.productID = productID
        view.store = store
        view.purchaseID = purchaseID
        view.state = state
        return view
    }

    static let id = UUID(
        uuid: (0x0F, 0xA1, 0x5B, 0x3C, 0xD2, 0xE4, 0x47, 0x6F, 0x8A, 0x9B, 0x0C, 0x1D, 0x2E, 0x3F, 0xAB, 0xCD))

    /// An event with no optional field set and empty details.
    static let bare = Event(id: id, type: .purchaseStarted, occurredAt: start, customerID: nil)

    /// An event with every field set, nested optionals included.
    static let full: Event = {
        var details = EventDetails(
            state: .gracePeriod, previousState: .active, expiresAt: start.addingTimeInterval(3600), autoRenew: false,
            previousProductID: "monthly", replacesPurchaseID: "token-1", transactionID: "2000000000000002",
            refundedShare: 0.5, fromCustomerID: CustomerID("bob"), toCustomerID: CustomerID("alice"),
            entitlement: "pro", balance: "coins", amount: -40, balanceAfter: 60, reason: "no-consent")
        details.refundRequestStatus = .sent
        details.basePlanID = "yearly-p1y"
        details.previousBasePlanID = "monthly-p1m"
        details.consumptionAnswer = ConsumptionAnswer(
            consumptionMilliPercent: 25_000, deliveryStatus: .undeliveredOther, refundPreference: .grantProrated,
            sampleContentProvided: true)
        return Event(
            id: id, type: .refundRequestSettled, occurredAt: start, customerID: CustomerID("alice"), store: .googlePlay,
            app: AppID("com.example.app"), environment: .sandbox, purchaseID: "token-2", productID: "yearly",
            details: details,
            entitlements: [entitlement("pro"), entitlement("ads-free", active: false, expiresAt: nil)])
    }()

    // MARK: Fields

    /// Every stored property the encoder writes; a new one must be added to EventJSON.swift first.
    @Test func everyStoredPropertyIsKnown() {
        func labels(_ value: Any) -> Set<String> { Set(Mirror(reflecting: value).children.compactMap(\.label)) }
        let hint = "a stored property was added or removed: write it in EventJSON.swift, then update this list"
        #expect(
            labels(Self.full)
                == [
                    "id", "type", "occurredAt", "customerID", "store", "app", "environment", "purchaseID", "productID",
                    "details", "entitlements",
                ], "Event: \(hint)")
        #expect(
            labels(Self.full.details)
                == [
                    "state", "previousState", "expiresAt", "autoRenew", "previousProductID", "replacesPurchaseID",
                    "transactionID", "refundedShare", "fromCustomerID", "toCustomerID", "entitlement", "balance",
                    "amount", "balanceAfter", "reason", "refundRequestStatus", "consumptionAnswer", "basePlanID",
                    "previousBasePlanID",
                ], "EventDetails: \(hint)")
        #expect(
            labels(Self.entitlementTemplate)
                == ["name", "active", "expiresAt", "productID", "store", "purchaseID", "state"],
            "EntitlementView: \(hint)")
        if let answer = Self.full.details.consumptionAnswer {
            #expect(
                labels(answer)
                    == [
                        "customerConsented", "consumptionMilliPercent", "deliveryStatus", "refundPreference",
                        "sampleContentProvided",
                    ], "ConsumptionAnswer: \(hint)")
        }
    }

    /// Each optional field, copied from one event into another: set on the bare event, cleared on the full one.
    static let optionalFields: [(name: String, copy: @Sendable (inout Event, Event) -> Void)] = [
        ("customerID", { $0.customerID = $1.customerID }),
        ("store", { $0.store = $1.store }),
        ("app", { $0.app = $1.app }),
        ("environment", { $0.environment = $1.environment }),
        ("purchaseID", { $0.purchaseID = $1.purchaseID }),
        ("productID", { $0.productID = $1.productID }),
        ("entitlements", { $0.entitlements = $1.entitlements }),
        ("details.state", { $0.details.state = $1.details.state }),
        ("details.previousState", { $0.details.previousState = $1.details.previousState }),
        ("details.expiresAt", { $0.details.expiresAt = $1.details.expiresAt }),
        ("details.autoRenew", { $0.details.autoRenew = $1.details.autoRenew }),
        ("details.basePlanID", { $0.details.basePlanID = $1.details.basePlanID }),
        ("details.previousProductID", { $0.details.previousProductID = $1.details.previousProductID }),
        ("details.previousBasePlanID", { $0.details.previousBasePlanID = $1.details.previousBasePlanID }),
        ("details.replacesPurchaseID", { $0.details.replacesPurchaseID = $1.details.replacesPurchaseID }),
        ("details.transactionID", { $0.details.transactionID = $1.details.transactionID }),
        ("details.refundedShare", { $0.details.refundedShare = $1.details.refundedShare }),
        ("details.fromCustomerID", { $0.details.fromCustomerID = $1.details.fromCustomerID }),
        ("details.toCustomerID", { $0.details.toCustomerID = $1.details.toCustomerID }),
        ("details.entitlement", { $0.details.entitlement = $1.details.entitlement }),
        ("details.balance", { $0.details.balance = $1.details.balance }),
        ("details.amount", { $0.details.amount = $1.details.amount }),
        ("details.balanceAfter", { $0.details.balanceAfter = $1.details.balanceAfter }),
        ("details.reason", { $0.details.reason = $1.details.reason }),
        ("details.refundRequestStatus", { $0.details.refundRequestStatus = $1.details.refundRequestStatus }),
        ("details.consumptionAnswer", { $0.details.consumptionAnswer = $1.details.consumptionAnswer }),
        (
            "details.consumptionAnswer.consumptionMilliPercent",
            {
                $0.details.consumptionAnswer?.consumptionMilliPercent =
                    $1.details.consumptionAnswer?.consumptionMilliPercent
            }
        ),
        (
            "details.consumptionAnswer.refundPreference",
            { $0.details.consumptionAnswer?.refundPreference = $1.details.consumptionAnswer?.refundPreference }
        ),
        (
            "entitlements[0].expiresAt",
            { target, source in
                guard !target.entitlements.isEmpty else { return }
                target.entitlements[0].expiresAt = source.entitlements.first?.expiresAt
            }
        ),
    ]

    @Test func eachOptionalFieldPresentAndAbsent() {
        Self.expectSameBytes(Self.bare, "no optional field")
        Self.expectSameBytes(Self.full, "every optional field")
        for field in Self.optionalFields {
            var only = Self.bare
            field.copy(&only, Self.full)
            Self.expectSameBytes(only, "only \(field.name)")
            var allBut = Self.full
            field.copy(&allBut, Self.bare)
            Self.expectSameBytes(allBut, "all but \(field.name)")
        }
        var withoutEntitlementExpiry = Self.full
        withoutEntitlementExpiry.entitlements[0].expiresAt = nil
        Self.expectSameBytes(withoutEntitlementExpiry, "an entitlement without expiresAt")
    }

    @Test func emptyDetailsAndEntitlements() throws {
        let json = String(decoding: try Self.bare.jsonData(), as: UTF8.self)
        #expect(json.contains(#""details":{}"#))
        #expect(json.contains(#""entitlements":[]"#))
    }

    // MARK: Event types

    /// What the event writer puts in an event of `type`.
    static func typical(_ type: EventType) -> Event {
        var event = Self.full
        event.type = type
        event.details = EventDetails()
        switch type {
        case .purchaseStarted, .subscriptionRenewed, .subscriptionRecovered, .subscriptionExpired,
            .subscriptionBillingRetry, .subscriptionGracePeriod, .subscriptionOnHold, .subscriptionPaused,
            .purchaseRevoked:
            event.details = EventDetails(
                state: .active, previousState: .billingRetry, expiresAt: start, autoRenew: true)
        case .subscriptionAutoRenewDisabled, .subscriptionAutoRenewEnabled:
            event.details = EventDetails(state: .canceled, autoRenew: type == .subscriptionAutoRenewEnabled)
        case .subscriptionProductChanged:
            event.details = EventDetails(
                state: .active, expiresAt: start, previousProductID: "monthly", replacesPurchaseID: "token-0")
        case .purchaseRefunded, .purchaseRefundReversed:
            event.details = EventDetails(state: .revoked, transactionID: "2000000000000003", refundedShare: 1.0 / 3)
        case .purchaseTransferred:
            event.details = EventDetails(fromCustomerID: CustomerID("bob"), toCustomerID: CustomerID("alice"))
        case .entitlementGranted, .entitlementRevoked:
            event.details = EventDetails(expiresAt: start, entitlement: "pro")
        case .balanceChanged:
            event.details = EventDetails(balance: "coins", amount: 100, balanceAfter: 250, reason: "purchase")
        case .refundRequestSettled:
            event.details = Self.full.details
        default:
            break
        }
        return event
    }

    @Test(arguments: EventType.all + [EventType("future.type"), EventType("odd/\"type\"\\")])
    func everyEventType(type: EventType) {
        Self.expectSameBytes(Self.typical(type), "\(type)")
        var unclaimed = Self.typical(type)
        unclaimed.customerID = nil
        unclaimed.entitlements = []
        Self.expectSameBytes(unclaimed, "\(type), unclaimed")
    }

    // MARK: Strings

    static let allASCII = String(decoding: (0..<128).map { UInt8($0) }, as: UTF8.self)

    static let specialStrings = [
        "", allASCII, "/", "//a/b/", "\"", "\"\"", "\\", "\\\\", "\\\"/", "\u{7F}", "é", "e\u{301}", "ß", "中文",
        "😀", "👨‍👩‍👧", "\u{2028}\u{2029}", "\u{FEFF}", "\u{10FFFF}", "a\u{0}b", "tab\tnew\nline\r\u{8}\u{C}",
        String(repeating: "x/\"", count: 300),
    ]

    /// `text` in every string field of an event.
    static func everywhere(_ text: String) -> Event {
        var event = Self.full
        event.customerID = CustomerID(text)
        event.app = AppID(text)
        event.type = EventType(text)
        event.purchaseID = text
        event.productID = text
        event.details.previousProductID = text
        event.details.replacesPurchaseID = text
        event.details.transactionID = text
        event.details.fromCustomerID = CustomerID(text)
        event.details.toCustomerID = CustomerID(text)
        event.details.entitlement = text
        event.details.balance = text
        event.details.reason = text
        event.entitlements = [
            entitlement(text, productID: text, purchaseID: text),
            entitlement(text + text, productID: "", purchaseID: ""),
        ]
        return event
    }

    /// Longer than the first buffer jsonData() tries, several times over.
    @Test(arguments: [1_000, 5_000, 60_000])
    func longStrings(length: Int) {
        let escaped = String(repeating: "\u{1}", count: length)
        Self.expectSameBytes(Self.everywhere(escaped), "\(length) characters, each escaped as six")
        var event = Self.bare
        event.purchaseID = String(repeating: "a", count: length)
        Self.expectSameBytes(event, "\(length) plain characters")
    }

    @Test func everyASCIICharacterAlone() {
        for byte in UInt8(0)..<128 {
            Self.expectSameBytes(Self.everywhere(String(UnicodeScalar(byte))), "character 0x\(String(byte, radix: 16))")
        }
    }

    @Test(arguments: specialStrings)
    func specialString(text: String) {
        Self.expectSameBytes(Self.everywhere(text), "\(text.debugDescription)")
    }

    // MARK: Dates

    static let specialDates: [Date] =
        ([
            0, -0.5, -1, -0.0001, -1e-7, 1e-7, 0.0001, 0.5, 0.999, 0.9999999, 0.99999999999, 59.999, 86_399.999,
            86_400, -86_400, -86_400.5, 68_169_600,  // 1972-02-29, the first leap day after 1970
            951_782_400, 951_868_800,  // 2000-02-29, 2000-03-01
            946_684_799.999_9, 946_684_800,  // 2000 begins
            -2_208_988_800, -2_203_977_600,  // 1900-01-01, 1900-02-28 (1900 has no leap day)
            -2_203_891_200,  // 1900-03-01
            -11_676_096_000,  // 1600-01-01
            -12_219_292_800, -12_219_292_800.5, -12_219_292_799.999, -12_219_292_801,  // the Gregorian start
            -62_135_596_800, -62_167_219_200, -62_198_755_200, -1e12,  // year 1, year 0, before
            2_147_483_647, 2_147_483_648, 2_147_483_648.999,  // 2038
            4_102_444_800, 4_107_542_400,  // 2100-01-01, 2100-03-01 (2100 has no leap day)
            1_800_000_000.123, 1_800_000_000.0001, 1_800_000_000.999_999,
            253_402_300_799, 253_402_300_799.5, 253_402_300_800, 253_402_300_801, 1e12, 1e15,  // year 9999 and after
        ] as [TimeInterval]).map { Date(timeIntervalSince1970: $0) }
        + ([
            -1e-20, -.leastNonzeroMagnitude, 0, 0.0001, 0.999, -0.001, 86_400 - 1e-9, -86_400 - 1e-9, -86_400 + 1e-9,
            .nan, .infinity, -.infinity, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
        ] as [TimeInterval]).map { Date(timeIntervalSinceReferenceDate: $0) }
        + [.distantPast, .distantFuture]

    static func dated(_ date: Date) -> Event {
        var event = Self.full
        event.occurredAt = date
        event.details.expiresAt = date
        event.entitlements[0].expiresAt = date
        return event
    }

    @Test func specialDatesMatch() {
        for date in Self.specialDates {
            Self.expectSameBytes(Self.dated(date), "date \(date.timeIntervalSinceReferenceDate) since 2001")
        }
    }

    /// Every day from 1968 to 2040 at a random time, every 367th day from the Gregorian start to
    /// year 10001, and the instants either side of those midnights.
    @Test func datesAcrossTheCalendar() {
        var random = SplitMix64(state: 1968)
        var seconds: [TimeInterval] = []
        for day in -731..<25_567 {
            seconds.append(TimeInterval(day * 86_400) + TimeInterval.random(in: 0..<86_400, using: &random))
        }
        for day in stride(from: -141_428, to: 2_933_000, by: 367) {
            let midnight = TimeInterval(day * 86_400)
            seconds += [midnight, midnight.nextDown, midnight.nextUp, midnight - 0.5, midnight + 43_200.75]
        }
        var event = Self.bare
        for second in seconds {
            event.occurredAt = Date(timeIntervalSince1970: second)
            guard Self.expectSameBytes(event, "date \(second) since 1970") else { return }
        }
    }

    // MARK: Numbers

    static let specialDoubles: [Double] = [
        0, -0.0, 1, -1, 0.5, 1.0 / 3, 2.0 / 3, 0.1, 0.2, 0.1 + 0.2, 0.25, 0.999_999_999_999_999_9, 1e-7, 2.5e-5, 1e-4,
        1e-3, 123_456.789, 1e15, 1e16, 1e17, 1e21, 1e22, 1e300, -1e300, 123_456_789_012_345_680, 4_503_599_627_370_497,
        .leastNonzeroMagnitude, .leastNormalMagnitude, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .pi,
        .ulpOfOne,
    ]

    @Test(arguments: specialDoubles)
    func refundedShare(share: Double) {
        var event = Self.full
        event.details.refundedShare = share
        Self.expectSameBytes(event, "refundedShare \(share)")
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity, .signalingNaN])
    func nonFiniteShareThrowsLikeJSONEncoder(share: Double) {
        var event = Self.full
        event.details.refundedShare = share
        #expect(throws: EncodingError.self) { try JSONWriterReference.encoder.encode(event) }
        #expect(throws: EncodingError.self) { try event.jsonData() }
    }

    @Test(
        arguments: [0, 1, -1, 9, 10, -10, 99, 100, 100_000, -100_000, 1 << 53, Int(Int32.max), .max, .min, .min + 1]
            as [Int])
    func integers(value: Int) {
        var event = Self.full
        event.details.amount = value
        event.details.balanceAfter = value
        event.details.consumptionAnswer?.consumptionMilliPercent = value
        Self.expectSameBytes(event, "integer \(value)")
    }

    // MARK: Entitlements

    @Test(arguments: [0, 1, 2, 3, 10, 200])
    func manyEntitlements(count: Int) {
        var event = Self.full
        let states = SubscriptionState.allCases
        event.entitlements = (0..<count).map { (index: Int) -> EntitlementView in
            let expiresAt: Date? = index % 3 == 0 ? nil : Self.start.addingTimeInterval(Double(index) * 3_600.5)
            let store: Store = index % 2 == 0 ? .appStore : .googlePlay
            return Self.entitlement(
                "entitlement-\(index)", active: index % 2 == 0, expiresAt: expiresAt, productID: "product/\(index)",
                store: store, purchaseID: "purchase-\(index)", state: states[index % states.count])
        }
        Self.expectSameBytes(event, "\(count) entitlements")
    }

    // MARK: Random events

    static let seeds = RandomJSONValues.seeds(
        [0x5EED_0000_0000_0001, 0x5EED_0000_0000_0002], addingFrom: "EVENT_JSON_SEED")

    @Test(arguments: seeds)
    func randomEvents(seed: UInt64) {
        var generator = RandomJSONValues(seed: seed)
        for index in 0..<3_000 {
            let event = generator.event()
            let context =
                "seed \(seed) (replay: EVENT_JSON_SEED=\(seed) swift test --filter EventJSONTests), event \(index)"
            guard Self.expectSameBytes(event, context) else { return }
        }
    }
}

/// Random events for the property test.
extension RandomJSONValues {
    mutating func entitlement() -> EntitlementView {
        EventJSONTests.entitlement(
            string(), active: chance(0.5), expiresAt: maybe { $0.date() }, productID: string(),
            store: element(Store.allCases), purchaseID: string(), state: element(SubscriptionState.allCases))
    }

    mutating func details() -> EventDetails {
        var details = EventDetails(
            state: maybe { $0.element(SubscriptionState.allCases) },
            previousState: maybe { $0.element(SubscriptionState.allCases) }, expiresAt: maybe { $0.date() },
            autoRenew: maybe { $0.chance(0.5) }, previousProductID: maybe { $0.string() },
            replacesPurchaseID: maybe { $0.string() }, transactionID: maybe { $0.string() },
            refundedShare: maybe { $0.double() }, fromCustomerID: maybe { CustomerID($0.string()) },
            toCustomerID: maybe { CustomerID($0.string()) }, entitlement: maybe { $0.string() },
            balance: maybe { $0.string() }, amount: maybe { $0.integer() }, balanceAfter: maybe { $0.integer() },
            reason: maybe { $0.string() })
        details.refundRequestStatus = maybe { $0.element(RefundRequestStatus.allCases) }
        details.basePlanID = maybe { $0.string() }
        details.previousBasePlanID = maybe { $0.string() }
        details.consumptionAnswer = maybe {
            ConsumptionAnswer(
                customerConsented: $0.chance(0.5), consumptionMilliPercent: $0.maybe { $0.integer() },
                deliveryStatus: $0.element(DeliveryStatus.allCases),
                refundPreference: $0.maybe { $0.element(RefundPreference.allCases) },
                sampleContentProvided: $0.chance(0.5))
        }
        return details
    }

    mutating func event() -> Event {
        Event(
            id: uuid(), type: chance(0.9) ? element(EventType.all) : EventType(string()), occurredAt: date(),
            customerID: maybe { CustomerID($0.string()) }, store: maybe { $0.element(Store.allCases) },
            app: maybe { AppID($0.string()) }, environment: maybe { $0.element(PurchaseEnvironment.allCases) },
            purchaseID: maybe { $0.string() }, productID: maybe { $0.string() }, details: details(),
            entitlements: (0..<Int.random(in: 0...4, using: &random)).map { _ in entitlement() })
    }
}
