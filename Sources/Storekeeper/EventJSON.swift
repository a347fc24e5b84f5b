public import Foundation

extension Event {
    /// The event's JSON body: byte for byte what `EventWriter.encoder` writes (a `JSONEncoder` with
    /// `.iso8601` dates and `.sortedKeys`), without Foundation's generic machinery.
    ///
    /// A CPU profile of notification processing had that encoder at 12 % of the SQLite writer
    /// thread (containers, dynamic casts, key sorting, date formatting). The body is stored, signed
    /// over and delivered, so its bytes must not change: EventJSONTests compares the two on every
    /// field, edge value and thousands of random events. A stored property added to `Event`,
    /// `EventDetails`, `EntitlementView` or `ConsumptionAnswer` must be written here too (a test
    /// lists them).
    ///
    /// - Throws: `EncodingError.invalidValue` for a non-finite `refundedShare`, as JSONEncoder does.
    public func jsonData() throws -> Data {
        try SortedKeysJSONWriter.data(capacity: 1024 + 256 * entitlements.count) { try $0.write(self) }
    }
}

extension SortedKeysJSONWriter {
    mutating func write(_ event: Event) throws {
        beginObject()
        member("app", event.app)
        member("customerID", event.customerID)
        key("details")
        try write(event.details)
        key("entitlements")
        array(event.entitlements) { $0.write($1) }
        member("environment", event.environment)
        key("id")
        write(event.id)
        member("occurredAt", event.occurredAt)
        member("productID", event.productID)
        member("purchaseID", event.purchaseID)
        member("store", event.store)
        member("type", event.type)
        endObject()
    }

    fileprivate mutating func write(_ details: EventDetails) throws {
        beginObject()
        member("amount", details.amount)
        member("autoRenew", details.autoRenew)
        member("balance", details.balance)
        member("balanceAfter", details.balanceAfter)
        member("basePlanID", details.basePlanID)
        if let answer = details.consumptionAnswer {
            key("consumptionAnswer")
            write(answer)
        }
        member("entitlement", details.entitlement)
        member("expiresAt", details.expiresAt)
        member("fromCustomerID", details.fromCustomerID)
        member("previousBasePlanID", details.previousBasePlanID)
        member("previousProductID", details.previousProductID)
        member("previousState", details.previousState)
        member("reason", details.reason)
        member("refundRequestStatus", details.refundRequestStatus)
        if let share = details.refundedShare {
            key("refundedShare")
            try write(share, at: ["details", "refundedShare"])
        }
        member("replacesPurchaseID", details.replacesPurchaseID)
        member("state", details.state)
        member("toCustomerID", details.toCustomerID)
        member("transactionID", details.transactionID)
        endObject()
    }

    /// Shared with the customer view, which lists the same entitlements.
    mutating func write(_ entitlement: EntitlementView) {
        beginObject()
        member("active", entitlement.active)
        member("expiresAt", entitlement.expiresAt)
        member("name", entitlement.name)
        member("productID", entitlement.productID)
        member("purchaseID", entitlement.purchaseID)
        member("state", entitlement.state)
        member("store", entitlement.store)
        endObject()
    }

    fileprivate mutating func write(_ answer: ConsumptionAnswer) {
        beginObject()
        member("consumptionMilliPercent", answer.consumptionMilliPercent)
        member("customerConsented", answer.customerConsented)
        member("deliveryStatus", answer.deliveryStatus)
        member("refundPreference", answer.refundPreference)
        member("sampleContentProvided", answer.sampleContentProvided)
        endObject()
    }
}
