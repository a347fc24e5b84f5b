import Foundation
import Storekeeper
import TestSupport
import Testing

/// What the server answers a refund consumption request with (``ConsumptionFacts/decision()``),
/// and the share of a consumable's credits spent (``ConsumedShare``): each rule once.
@Suite struct RefundDecisionTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let yes = ConsumptionConsent(consented: true, decidedAt: now)

    func facts(
        _ kind: ProductKind = .consumable, customer: CustomerID? = CustomerID("alice"),
        consent: ConsumptionConsent? = yes,
        delivery: DeliveryStatus = .delivered, consumed: Int? = 40_000, policy: RefundPolicy = RefundPolicy()
    ) -> ConsumptionFacts {
        ConsumptionFacts(
            kind: kind, customerID: customer, consent: consent, delivery: delivery, consumedMilliPercent: consumed,
            policy: policy)
    }

    func answer(_ facts: ConsumptionFacts) throws -> ConsumptionAnswer {
        try facts.decision().get()
    }

    func skip(_ facts: ConsumptionFacts) -> ConsumptionSkipReason? {
        guard case .failure(let skip) = facts.decision() else { return nil }
        return skip.reason
    }

    // MARK: Nothing is sent without consent

    @Test func nothingIsSentWithoutAKnownYes() {
        #expect(skip(facts(customer: nil)) == .noCustomer)
        #expect(skip(facts(consent: nil)) == .noConsent)
        #expect(skip(facts(consent: ConsumptionConsent(consented: false, decidedAt: Self.now))) == .consentDeclined)
        #expect(skip(facts(policy: RefundPolicy(answer: false))) == .answeringOff)
        #expect(skip(facts()) == nil)
    }

    // MARK: Each field

    @Test func theFieldsComeFromTheFacts() throws {
        let sent = try answer(facts(consumed: 67_932, policy: RefundPolicy(sampleContentProvided: true)))
        #expect(sent.customerConsented)
        #expect(sent.consumptionMilliPercent == 67_932)
        #expect(sent.deliveryStatus == .delivered)
        #expect(sent.refundPreference == nil)
        #expect(sent.sampleContentProvided)
    }

    @Test func aSubscriptionNeverCarriesAPercentage() throws {
        let sent = try answer(
            facts(.subscription, consumed: 50_000, policy: RefundPolicy(preference: .fixed(.grantProrated))))
        #expect(sent.consumptionMilliPercent == nil)
        #expect(sent.refundPreference == .grantProrated)
    }

    @Test(arguments: [DeliveryStatus.undeliveredOther, .undeliveredQualityIssue, .undeliveredServerOutage])
    func anUndeliveredPurchaseSendsZero(delivery: DeliveryStatus) throws {
        let sent = try answer(
            facts(delivery: delivery, consumed: 80_000, policy: RefundPolicy(preference: .fixed(.grantProrated))))
        #expect(sent.consumptionMilliPercent == 0)
        #expect(sent.deliveryStatus == delivery)
        // Prorated needs a share above 0: with nothing delivered, the whole refund is the prorated one.
        #expect(sent.refundPreference == .grantFull)
    }

    @Test func anUnknownShareIsLeftOut() throws {
        let sent = try answer(
            facts(.nonConsumable, consumed: nil, policy: RefundPolicy(preference: .fixed(.grantProrated))))
        #expect(sent.consumptionMilliPercent == nil)
        // Apple refuses GRANT_PRORATED without a percentage for a one-time purchase.
        #expect(sent.refundPreference == nil)
    }

    // MARK: Policies

    @Test(arguments: [RefundPreference.grantFull, .grantProrated, .decline])
    func aFixedPreferenceIsSent(preference: RefundPreference) throws {
        #expect(try answer(facts(policy: RefundPolicy(preference: .fixed(preference)))).refundPreference == preference)
    }

    @Test(arguments: [
        (Int?.some(80_000), RefundPreference?.some(.decline)),
        (50_000, .grantProrated),
        (10_000, .grantProrated),
        (0, .grantFull),
        (nil, nil),
    ])
    func aRuleOnTheConsumedShare(consumed: Int?, expected: RefundPreference?) throws {
        let policy = RefundPolicy(preference: .byConsumedShare(declineAbovePercent: 50, otherwise: .grantProrated))
        #expect(try answer(facts(.nonConsumable, consumed: consumed, policy: policy)).refundPreference == expected)
    }

    @Test func proratedBecomesWhatAppleTakesAtTheEdges() throws {
        let prorated = RefundPolicy(preference: .fixed(.grantProrated))
        #expect(try answer(facts(consumed: 0, policy: prorated)).refundPreference == .grantFull)
        #expect(try answer(facts(consumed: 100_000, policy: prorated)).refundPreference == .decline)
        #expect(try answer(facts(consumed: 99_999, policy: prorated)).refundPreference == .grantProrated)
    }

    @Test func aProductOverridesItsAppsPolicy() {
        let app = RefundPolicy(answer: true, preference: .fixed(.decline), sampleContentProvided: true)
        let product = RefundPolicyOverride(preference: .fixed(.grantFull))
        #expect(
            app.overridden(by: product) == RefundPolicy(preference: .fixed(.grantFull), sampleContentProvided: true))
        #expect(app.overridden(by: RefundPolicyOverride(answer: false)).answer == false)
        #expect(app.overridden(by: nil) == app)
    }

    // MARK: The share of a consumable spent, oldest credits first

    func entry(_ amount: Int, _ reason: LedgerEntry.Reason, _ transaction: String?) -> LedgerEntry {
        LedgerEntry(
            customerID: CustomerID("alice"), balance: "coins", amount: amount, reason: reason,
            idempotencyKey: UUID().uuidString, transactionID: transaction, createdAt: Self.now)
    }

    @Test func debitsSpendTheOldestCreditsFirst() {
        let ledger = [
            entry(100, .purchase, "t1"), entry(100, .purchase, "t2"), entry(-130, .debit, nil),
        ]
        #expect(ConsumedShare.ofCredit("t1", in: ledger, balance: "coins") == 100_000)
        #expect(ConsumedShare.ofCredit("t2", in: ledger, balance: "coins") == 30_000)
        #expect(ConsumedShare.ofCredit("t3", in: ledger, balance: "coins") == nil)
        #expect(ConsumedShare.ofCredit("t2", in: ledger, balance: "gems") == nil)
    }

    @Test func aRefundTakesFromItsOwnCreditAndIsNotSpending() {
        let ledger = [
            entry(100, .purchase, "t1"), entry(-50, .refundAdjustment, "t1"), entry(100, .purchase, "t2"),
            entry(-60, .debit, nil),
        ]
        // t1 kept 50 after its refund; the debit spent those 50 and 10 of t2.
        #expect(ConsumedShare.ofCredit("t1", in: ledger, balance: "coins") == 50_000)
        #expect(ConsumedShare.ofCredit("t2", in: ledger, balance: "coins") == 10_000)
        // A reversal gives t1's credit back: still 50 of it spent.
        let reversed = ledger + [entry(50, .refundAdjustment, "t1")]
        #expect(ConsumedShare.ofCredit("t1", in: reversed, balance: "coins") == 50_000)
    }

    @Test func nothingSpentIsZero() {
        #expect(ConsumedShare.ofCredit("t1", in: [entry(100, .purchase, "t1")], balance: "coins") == 0)
    }

    /// The one-pass reading gives what the rule as first written gives (each debit walking the
    /// credits from the oldest, each correction searching for its transaction's credit), on random
    /// ledgers mixing credits, transfers both ways, refunds, reversals, debits and another balance.
    @Test func theOnePassReadingAgreesWithTheRuleOnRandomLedgers() {
        var random = SplitMix64(state: 18)
        for _ in 0..<300 {
            var ledger: [LedgerEntry] = []
            for _ in 0..<Int.random(in: 0...40, using: &random) {
                let transaction = "t\(Int.random(in: 1...6, using: &random))"
                let amount = Int.random(in: 1...120, using: &random)
                switch Int.random(in: 0..<10, using: &random) {
                case 0...2: ledger.append(entry(amount, .purchase, transaction))
                case 3: ledger.append(entry(amount, .transfer, transaction))
                case 4: ledger.append(entry(-amount, .transfer, transaction))
                case 5: ledger.append(entry(-amount, .refundAdjustment, transaction))
                case 6: ledger.append(entry(amount, .refundAdjustment, transaction))
                case 7: ledger.append(entry(-amount, .purchase, transaction))
                case 8:
                    var other = entry(amount, .purchase, transaction)
                    other.balance = "gems"
                    ledger.append(other)
                default: ledger.append(entry(-amount, .debit, nil))
                }
            }
            for number in 1...6 {
                let spent = ConsumedShare.spent("t\(number)", in: ledger, balance: "coins")
                let expected = Self.spentAsFirstWritten("t\(number)", in: ledger, balance: "coins")
                #expect(spent?.credits == expected?.credits && spent?.of == expected?.of, "\(ledger)")
            }
        }
    }

    /// ``ConsumedShare/spent(_:in:balance:)`` as first written, searching the credits for each entry.
    static func spentAsFirstWritten(_ transactionID: String, in entries: [LedgerEntry], balance: String)
        -> (credits: Int, of: Int)?
    {
        var remaining: [(transaction: String?, amount: Int)] = []
        var credited = 0
        var takenBack = 0
        for entry in entries where entry.balance == balance {
            switch entry.reason {
            case .purchase where entry.amount > 0, .transfer where entry.amount > 0:
                remaining.append((entry.transactionID, entry.amount))
                if entry.transactionID == transactionID { credited += entry.amount }
            case .refundAdjustment, .purchase, .transfer:
                if entry.transactionID == transactionID { takenBack -= entry.amount }
                if let index = remaining.firstIndex(where: { $0.transaction == entry.transactionID }) {
                    remaining[index].amount = max(0, remaining[index].amount + entry.amount)
                }
            case .debit:
                var owed = -entry.amount
                for index in remaining.indices where owed > 0 {
                    let taken = min(owed, remaining[index].amount)
                    remaining[index].amount -= taken
                    owed -= taken
                }
            }
        }
        guard credited > 0 else { return nil }
        let left = remaining.filter { $0.transaction == transactionID }.map(\.amount).reduce(0, +)
        return (min(max(credited - takenBack - left, 0), credited), credited)
    }
}
