import Foundation

/// An ISO 4217 currency code as a store reports it (`USD`, `EUR`, `JPY`).
public struct CurrencyCode: StringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// What a store says a billing event cost: an amount in millionths of the currency's unit, so
/// Apple's milliunits and Google's units-and-nanos both convert without rounding.
public struct Price: Sendable, Hashable, Codable {
    public var micros: Int64
    public var currency: CurrencyCode

    public init(micros: Int64, currency: CurrencyCode) {
        self.micros = micros
        self.currency = currency
    }

    /// The price in milliunits (App Store `price`), or nil when the amount is negative.
    public init?(milliunits: Int64, currency: String) {
        guard milliunits >= 0, !currency.isEmpty else { return nil }
        let (micros, overflow) = milliunits.multipliedReportingOverflow(by: 1_000)
        guard !overflow else { return nil }
        self.init(micros: micros, currency: CurrencyCode(currency))
    }

    /// The share of this price that `fraction` (0...1) is, rounded to the nearest micro.
    public func share(_ fraction: Double) -> Int64 {
        Int64((Double(micros) * min(max(fraction, 0), 1)).rounded())
    }
}

/// The offer a billing event was bought under, when a store says so. A free trial is an
/// introductory offer that costs nothing; while its period runs the subscription grants access
/// like any active one, and the console counts it apart as "trial".
public enum BillingOffer: String, Sendable, Hashable, Codable, CaseIterable {
    case freeTrial = "free_trial"
    /// An introductory offer with a reduced price (not free).
    case introductory
    /// Any other offer: promotional, offer code, win-back, developer-determined.
    case other
}
