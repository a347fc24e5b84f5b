public import AppStoreServer
public import Foundation
import SwiftASN1

extension AppStoreSimulation {
    /// A StoreKit 1 app receipt for `customer`'s purchases in the app `bundleId` in `environment`
    /// (nil: the app's default), as an installation of that environment would find it at
    /// `Bundle.main.appStoreReceiptURL`: a DER PKCS#7 `ContentInfo`/`SignedData` whose content is the
    /// SET of receipt attributes — receipt type (0: `ProductionSandbox` for Sandbox, else
    /// `Production`), bundle id (2), app version (3), creation date (12), original app
    /// version (19) and one in-app purchase (17) per transaction, oldest first, with quantity (1701),
    /// product id (1702), transaction id (1703), purchase date (1704), original transaction id (1705),
    /// original purchase date (1706), expiry (1708) and web order line item id (1711).
    ///
    /// The envelope carries no certificates and no signature: `AppReceipt` and the simulator's
    /// verifyReceipt read it; nothing can verify it, as with real receipts outside Apple's chain.
    public func makeAppReceipt(
        customer: String, bundleId: String, environment: Environment? = nil
    ) throws(AppStoreSimulationError) -> Data {
        let now = clock.now()
        return try state.withLock { (state) throws(AppStoreSimulationError) -> Data in
            guard let app = state.apps[bundleId] else { throw .unknownApp(bundleId) }
            guard let customerRecord = state.customers[customer] else { throw .invalid("no customer \(customer)") }
            let environment = environment ?? app.environment
            var ids = customerRecord.oneTimeTransactionIds
            for subscription in state.subscriptions.values
            where subscription.customerId == customer && subscription.bundleId == bundleId {
                ids.append(contentsOf: subscription.transactionIds)
            }
            let records = ids.compactMap { state.transactions[$0] }.filter {
                $0.bundleId == bundleId && $0.environment == environment
            }
            return Data(
                try ReceiptMinter.receipt(app: app, environment: environment, transactions: records, createdAt: now))
        }
    }
}

/// Writes app receipts with SwiftASN1's DER serializer.
enum ReceiptMinter {
    static let signedDataOID: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 2]
    static let dataOID: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 1]
    static let sha256OID: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 1]

    /// The receipt of `transactions` (sorted by purchase date, then id) for `app` in `environment`.
    static func receipt(
        app: SimulatedApp, environment: Environment, transactions: [TransactionRecord], createdAt: Date
    ) throws(AppStoreSimulationError) -> [UInt8] {
        let sorted = transactions.sorted {
            ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId)
        }
        do {
            var attributes: [(Int64, [UInt8])] = [
                (0, try utf8(environment == .production ? "Production" : "ProductionSandbox")),
                (2, try utf8(app.bundleId)),
                (3, try utf8("1.0")),
                (12, try ia5(date(createdAt))),
                (19, try utf8("1.0")),
            ]
            for record in sorted {
                var purchase: [(Int64, [UInt8])] = [
                    (1701, try integer(1)),
                    (1702, try utf8(record.productId)),
                    (1703, try utf8(record.transactionId)),
                    (1704, try ia5(date(record.purchaseDate))),
                    (1705, try utf8(record.originalTransactionId)),
                    (1706, try ia5(date(record.originalPurchaseDate))),
                    (1708, try ia5(record.expiresDate.map(date) ?? "")),
                ]
                if let line = record.webOrderLineItemId.flatMap({ Int64($0) }) {
                    purchase.append((1711, try integer(line)))
                }
                attributes.append((17, try attributeSet(purchase)))
            }
            return try envelope(payload: try attributeSet(attributes))
        } catch {
            throw .invalid("the receipt could not be encoded: \(error)")
        }
    }

    static func date(_ date: Date) -> String {
        date.formatted(.iso8601)
    }

    static func der(_ body: (inout DER.Serializer) throws -> Void) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try body(&serializer)
        return serializer.serializedBytes
    }

    static func utf8(_ text: String) throws -> [UInt8] { try der { try $0.serialize(ASN1UTF8String(text)) } }
    static func ia5(_ text: String) throws -> [UInt8] { try der { try $0.serialize(try ASN1IA5String(text)) } }
    static func integer(_ value: Int64) throws -> [UInt8] { try der { try $0.serialize(value) } }

    /// `SET OF SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`.
    static func attributeSet(_ attributes: [(Int64, [UInt8])]) throws -> [UInt8] {
        try der { serializer in
            try serializer.appendConstructedNode(identifier: .set) { set in
                for (type, value) in attributes {
                    try set.appendConstructedNode(identifier: .sequence) { sequence in
                        try sequence.serialize(type)
                        try sequence.serialize(Int64(1))
                        try sequence.serialize(ASN1OctetString(contentBytes: value[...]))
                    }
                }
            }
        }
    }

    /// `ContentInfo { signedData, SignedData { 1, {sha256}, {data, payload}, {} } }` (tests build
    /// malformed receipts with another `contentType`).
    static func envelope(payload: [UInt8], contentType: ASN1ObjectIdentifier = signedDataOID) throws -> [UInt8] {
        try der { serializer in
            try serializer.appendConstructedNode(identifier: .sequence) { contentInfo in
                try contentInfo.serialize(contentType)
                try contentInfo.serialize(explicitlyTaggedWithTagNumber: 0, tagClass: .contextSpecific) { explicit in
                    try explicit.appendConstructedNode(identifier: .sequence) { signedData in
                        try signedData.serialize(Int64(1))
                        try signedData.appendConstructedNode(identifier: .set) { algorithms in
                            try algorithms.appendConstructedNode(identifier: .sequence) { algorithm in
                                try algorithm.serialize(sha256OID)
                            }
                        }
                        try signedData.appendConstructedNode(identifier: .sequence) { encapsulated in
                            try encapsulated.serialize(dataOID)
                            try encapsulated.serialize(explicitlyTaggedWithTagNumber: 0, tagClass: .contextSpecific) {
                                try $0.serialize(ASN1OctetString(contentBytes: payload[...]))
                            }
                        }
                        signedData.appendConstructedNode(identifier: .set) { _ in }
                    }
                }
            }
        }
    }
}
