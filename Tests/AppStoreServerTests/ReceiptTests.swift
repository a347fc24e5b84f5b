import AppStoreServer
import Foundation
import SwiftASN1
import TestSupport
import Testing

@Suite struct AppReceiptTests {
    static func date(_ text: String) -> Date {
        // Reference values computed independently of the parser under test.
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions =
            text.contains(".") ? [.withInternetDateTime, .withFractionalSeconds] : [.withInternetDateTime]
        return formatter.date(from: text)!
    }

    static func expectFixturePurchases(_ receipt: AppReceipt) {
        #expect(receipt.bundleId == "com.example")
        #expect(receipt.receiptType == "ProductionSandbox")
        #expect(
            receipt.inAppPurchases == [
                InAppPurchase(
                    productId: "com.example.monthly", transactionId: "2000000100000001",
                    originalTransactionId: "2000000100000001", purchaseDate: date("2024-01-15T10:00:00Z"),
                    originalPurchaseDate: date("2024-01-15T10:00:00Z"), expiresDate: nil, quantity: 1),
                InAppPurchase(
                    productId: "com.example.monthly", transactionId: "2000000100000002",
                    originalTransactionId: "2000000100000001", purchaseDate: date("2024-02-15T10:00:00Z"),
                    originalPurchaseDate: date("2024-02-15T10:00:00Z"), expiresDate: nil, quantity: 1),
                InAppPurchase(
                    productId: "com.example.coins", transactionId: "2000000100000003",
                    originalTransactionId: "2000000100000003", purchaseDate: date("2024-01-20T08:30:00.250Z"),
                    originalPurchaseDate: date("2024-01-20T08:30:00.250Z"), expiresDate: nil, quantity: 5),
            ])
        #expect(receipt.transactionId == "2000000100000001")
        #expect(receipt.latestPurchase?.transactionId == "2000000100000002")
    }

    @Test func derReceiptWithSeveralPurchases() throws {
        let bytes = ReceiptFixture.derReceipt()
        let receipt = try AppReceipt(bytes: bytes)
        Self.expectFixturePurchases(receipt)
        #expect(try receipt.requireTransactionId() == "2000000100000001")
        // The same receipt as base64 text, with the line breaks receipts pick up in transit.
        let base64 = ReceiptFixture.wrapped(Data(bytes).base64EncodedString())
        #expect(try AppReceipt(base64: base64) == receipt)
        #expect(try StoreKitReceipt(base64: base64) == .app(receipt))
    }

    @Test func berReceiptWithIndefiniteLengthsAndChunkedContent() throws {
        let ber = ReceiptFixture.berReceipt()
        // Really BER: the outer ContentInfo has an indefinite length, and DER parsing refuses it.
        #expect(Array(ber.prefix(2)) == [0x30, 0x80])
        #expect(throws: (any Error).self) { try DER.parse(ber) }
        let receipt = try AppReceipt(bytes: ber)
        Self.expectFixturePurchases(receipt)
        #expect(receipt == (try AppReceipt(bytes: ReceiptFixture.derReceipt())))
        // Other chunk sizes, down to one byte per chunk.
        for chunkSize in [1, 2, 64, 4096] {
            #expect(try AppReceipt(bytes: ReceiptFixture.berReceipt(chunkSize: chunkSize)) == receipt)
        }
    }

    @Test func xcodeStylePayloadWrappedInAnotherOctetString() throws {
        let set = ReceiptFixture.derAttributeSet(ReceiptFixture.payloadAttributes(purchases: ReceiptFixture.purchases))
        let wrapped = ReceiptFixture.der { try $0.serialize(ASN1OctetString(contentBytes: set[...])) }
        let receipt = try AppReceipt(bytes: ReceiptFixture.derEnvelope(payload: wrapped))
        Self.expectFixturePurchases(receipt)
    }

    @Test func unknownAttributesHoldingNestedSetsAreSkipped() throws {
        var attributes = ReceiptFixture.payloadAttributes(purchases: [ReceiptFixture.purchases[0]])
        // An unknown top-level attribute whose value is itself a set of attributes holding a set.
        let inner = ReceiptFixture.derAttributeSet([(1703, ReceiptFixture.utf8("not-a-purchase"))])
        attributes.append((9999, ReceiptFixture.derAttributeSet([(17, inner), (5, [0xFF])])))
        // An unknown in-app attribute with a nested set and arbitrary bytes.
        var inApp = ReceiptFixture.inAppAttributes(ReceiptFixture.purchases[1])
        inApp.append((1799, inner))
        inApp.append((1719, ReceiptFixture.integer(0)))
        attributes.append((17, ReceiptFixture.derAttributeSet(inApp)))
        let receipt = try AppReceipt(
            bytes: ReceiptFixture.derEnvelope(payload: ReceiptFixture.derAttributeSet(attributes)))
        #expect(receipt.inAppPurchases.map(\.transactionId) == ["2000000100000001", "2000000100000002"])
    }

    @Test func receiptWithoutPurchasesParsesToAnEmptyList() throws {
        let receipt = try AppReceipt(bytes: ReceiptFixture.derReceipt(purchases: []))
        #expect(receipt.bundleId == "com.example")
        #expect(receipt.inAppPurchases.isEmpty)
        #expect(receipt.transactionId == nil)
        #expect(receipt.latestPurchase == nil)
        #expect(throws: ReceiptError.self) { try receipt.requireTransactionId() }
        do {
            _ = try StoreKitReceipt(bytes: ReceiptFixture.derReceipt(purchases: [])).requireTransactionId()
            Issue.record("expected noInAppPurchases")
        } catch {
            #expect(error.reason == .noInAppPurchases)
        }
    }

    @Test func transactionIdFallsBackToTheOriginalOne() throws {
        let onlyOriginal = ReceiptFixture.derAttributeSet([(1705, ReceiptFixture.utf8("77"))])
        var attributes = ReceiptFixture.payloadAttributes(purchases: [])
        attributes.append((17, onlyOriginal))
        attributes.append(
            (17, ReceiptFixture.derAttributeSet(ReceiptFixture.inAppAttributes(ReceiptFixture.purchases[2]))))
        let receipt = try AppReceipt(
            bytes: ReceiptFixture.derEnvelope(payload: ReceiptFixture.derAttributeSet(attributes)))
        #expect(receipt.inAppPurchases.first == InAppPurchase(originalTransactionId: "77"))
        #expect(receipt.transactionId == "77")
        #expect(receipt.latestPurchase?.transactionId == "2000000100000003")
    }

    @Test func stringValuesMayBeIA5OrPrintable() throws {
        let attributes: [(Int64, [UInt8])] = [
            (2, ReceiptFixture.ia5("com.example")),
            (
                17,
                ReceiptFixture.derAttributeSet([
                    (1702, ReceiptFixture.der { try $0.serialize(ASN1PrintableString("product 1")) }),
                    (1703, ReceiptFixture.utf8("1")),
                    (1704, ReceiptFixture.utf8("2024-05-01T12:00:00+09:00")),
                ])
            ),
        ]
        let receipt = try AppReceipt(
            bytes: ReceiptFixture.derEnvelope(payload: ReceiptFixture.derAttributeSet(attributes)))
        #expect(receipt.bundleId == "com.example")
        #expect(
            receipt.inAppPurchases == [
                InAppPurchase(
                    productId: "product 1", transactionId: "1", purchaseDate: Self.date("2024-05-01T03:00:00Z"))
            ])
    }

    // MARK: - Refusals

    /// The reason `body` failed with (every parser throws only `ReceiptError`: its `throws` is typed).
    static func reason(_ body: () throws -> Void) -> ReceiptError.Reason? {
        do {
            try body()
            return nil
        } catch let error as ReceiptError {
            #expect(!error.detail.isEmpty && !error.detail.contains("\n"))
            return error.reason
        } catch {
            Issue.record("not a ReceiptError: \(error)")
            return nil
        }
    }

    static func envelope(_ attributes: [(Int64, [UInt8])]) -> [UInt8] {
        ReceiptFixture.derEnvelope(payload: ReceiptFixture.derAttributeSet(attributes))
    }

    @Test func malformedReceiptsAreRefusedWithTheFailingStep() {
        let bundle: (Int64, [UInt8]) = (2, ReceiptFixture.utf8("com.example"))
        func inApp(_ attributes: [(Int64, [UInt8])]) -> (Int64, [UInt8]) {
            (17, ReceiptFixture.derAttributeSet(attributes))
        }
        let cases: [(String, ReceiptError.Reason, () throws -> Void)] = [
            ("not base64", .notBase64, { _ = try AppReceipt(base64: "MIIB*AAA") }),
            ("padding in the middle", .notBase64, { _ = try AppReceipt(base64: "MA==MA==") }),
            ("one dangling symbol", .notBase64, { _ = try AppReceipt(base64: "MAAAA") }),
            ("empty", .notPKCS7, { _ = try AppReceipt(bytes: []) }),
            ("not ASN.1", .notPKCS7, { _ = try AppReceipt(bytes: Array("hello".utf8)) }),
            ("trailing bytes", .notPKCS7, { _ = try AppReceipt(bytes: ReceiptFixture.derReceipt() + [0]) }),
            (
                "not signedData", .notPKCS7,
                {
                    _ = try AppReceipt(
                        bytes: ReceiptFixture.derEnvelope(payload: [0x31, 0], contentType: ReceiptFixture.dataOID))
                }
            ),
            ("a bare SET", .notPKCS7, { _ = try AppReceipt(bytes: [0x31, 0]) }),
            ("detached signature", .noContent, { _ = try AppReceipt(bytes: ReceiptFixture.berEnvelope(content: nil)) }),
            (
                "content is an INTEGER", .noContent,
                { _ = try AppReceipt(bytes: ReceiptFixture.berEnvelope(content: .raw(ReceiptFixture.integer(5)))) }
            ),
            (
                "payload is a SEQUENCE", .malformedPayload,
                { _ = try AppReceipt(bytes: ReceiptFixture.derEnvelope(payload: [0x30, 0])) }
            ),
            (
                "payload is not ASN.1", .malformedPayload,
                { _ = try AppReceipt(bytes: ReceiptFixture.derEnvelope(payload: [0xFF])) }
            ),
            (
                "no bundle id", .malformedPayload,
                { _ = try AppReceipt(bytes: ReceiptFixture.derReceipt(bundleId: nil)) }
            ),
            ("two bundle ids", .malformedAttribute, { _ = try AppReceipt(bytes: Self.envelope([bundle, bundle])) }),
            (
                "attribute with two fields", .malformedPayload,
                {
                    let set = ReceiptFixture.der { s in
                        try s.appendConstructedNode(identifier: .set) { set in
                            try set.appendConstructedNode(identifier: .sequence) {
                                try $0.serialize(Int64(2))
                                try $0.serialize(Int64(1))
                            }
                        }
                    }
                    _ = try AppReceipt(bytes: ReceiptFixture.derEnvelope(payload: set))
                }
            ),
            (
                "negative type", .malformedPayload,
                {
                    let set = ReceiptFixture.der { s in
                        try s.appendConstructedNode(identifier: .set) { set in
                            try set.appendConstructedNode(identifier: .sequence) {
                                try $0.serialize(Int64(-2))
                                try $0.serialize(Int64(1))
                                try $0.serialize(ASN1OctetString(contentBytes: [0x05, 0x00]))
                            }
                        }
                    }
                    _ = try AppReceipt(bytes: ReceiptFixture.derEnvelope(payload: set))
                }
            ),
            (
                "bundle id is an INTEGER", .malformedAttribute,
                { _ = try AppReceipt(bytes: Self.envelope([(2, ReceiptFixture.integer(7))])) }
            ),
            (
                "in-app value is not a SET", .malformedAttribute,
                { _ = try AppReceipt(bytes: Self.envelope([bundle, (17, ReceiptFixture.utf8("x"))])) }
            ),
            (
                "bad purchase date", .malformedAttribute,
                {
                    _ = try AppReceipt(
                        bytes: Self.envelope([bundle, inApp([(1704, ReceiptFixture.ia5("2024-02-30T00:00:00Z"))])]))
                }
            ),
            (
                "date without zone", .malformedAttribute,
                {
                    _ = try AppReceipt(
                        bytes: Self.envelope([bundle, inApp([(1704, ReceiptFixture.ia5("2024-02-01T00:00:00"))])]))
                }
            ),
            (
                "negative quantity", .malformedAttribute,
                { _ = try AppReceipt(bytes: Self.envelope([bundle, inApp([(1701, ReceiptFixture.integer(-1))])])) }
            ),
            (
                "duplicate transaction id", .malformedAttribute,
                {
                    let id = ReceiptFixture.utf8("1")
                    _ = try AppReceipt(bytes: Self.envelope([bundle, inApp([(1703, id), (1703, id)])]))
                }
            ),
            (
                "invalid UTF-8", .malformedAttribute,
                {
                    let bad = ReceiptFixture.der {
                        $0.appendPrimitiveNode(identifier: .utf8String) { $0.append(contentsOf: [0xC3, 0x28]) }
                    }
                    _ = try AppReceipt(bytes: Self.envelope([bundle, inApp([(1702, bad)])]))
                }
            ),
        ]
        for (name, expected, body) in cases {
            #expect(Self.reason(body) == expected, "\(name)")
        }
    }

    @Test func sizeLimitIsCheckedFirst() {
        let huge = [UInt8](repeating: 0x30, count: AppReceipt.defaultMaximumBytes + 1)
        #expect(Self.reason { _ = try AppReceipt(bytes: huge) } == .tooLarge)
        #expect(Self.reason { _ = try StoreKitReceipt(bytes: huge) } == .tooLarge)
        let text = String(repeating: "A", count: 2 * AppReceipt.defaultMaximumBytes + 1)
        #expect(Self.reason { _ = try AppReceipt(base64: text) } == .tooLarge)
        // Within the text limit but over the byte limit once decoded.
        let decodedTooLarge = String(repeating: "MDAw", count: AppReceipt.defaultMaximumBytes / 3 + 1)
        #expect(Self.reason { _ = try AppReceipt(base64: decodedTooLarge) } == .tooLarge)
        // A smaller configured limit.
        #expect(Self.reason { _ = try AppReceipt(bytes: ReceiptFixture.derReceipt(), maximumBytes: 100) } == .tooLarge)
    }

    @Test func deepNestingIsRefusedByTheDepthLimit() {
        // 10,000 nested indefinite-length SEQUENCEs: SwiftASN1 stops at depth 50.
        let depth = 10_000
        let bytes =
            Array(repeating: [0x30, 0x80], count: depth).flatMap { $0 } + [UInt8](repeating: 0, count: 2 * depth)
        let start = ContinuousClock.now
        #expect(Self.reason { _ = try AppReceipt(bytes: bytes) } == .notPKCS7)
        // Nested inside the content, too.
        let nestedPayload =
            Array(repeating: [0x31, 0x80], count: 100).flatMap { $0 } + [UInt8](repeating: 0, count: 200)
        #expect(
            Self.reason { _ = try AppReceipt(bytes: ReceiptFixture.derEnvelope(payload: nestedPayload)) }
                == .malformedPayload)
        #expect(ContinuousClock.now - start < ReceiptMutationTests.runawayBound)
    }

    @Test func manyPurchasesParseInLinearTime() throws {
        let purchases = (0..<2000).map { index in
            ReceiptFixture.Purchase(
                productId: "com.example.p\(index)", transactionId: "\(1_000_000 + index)",
                originalTransactionId: "1000000", purchaseDate: "2024-01-01T00:00:00Z")
        }
        let bytes = ReceiptFixture.berReceipt(purchases: purchases, chunkSize: 1000)
        let start = ContinuousClock.now
        let receipt = try AppReceipt(bytes: bytes)
        // A guard against a parse quadratic in the purchases (about a thousand times the linear
        // parse's work at 2,000), not a speed measure: alone, a debug build parses them in well
        // under a second; beside the whole suite's parallel tests it took 5.5 s once, past the
        // 5 s this bound first had.
        #expect(ContinuousClock.now - start < .seconds(60))
        #expect(receipt.inAppPurchases.count == 2000)
        #expect(receipt.inAppPurchases.last?.transactionId == "1001999")
    }
}

@Suite struct LegacyTransactionReceiptTests {
    /// `apple-library-test/legacyTransaction`, decoded by hand: base64 of
    /// `{\n"purchase-info" = "ewoidHJhbnNhY3Rpb24taWQiID0gIjMzOTkzMzk5IjsKfQo=";\n}\n`, whose
    /// purchase-info is base64 of `{\n"transaction-id" = "33993399";\n}\n`.
    @Test(.enabled(if: AppleVectors.available, AppleVectors.skipReason))
    func appleLibraryVector() throws {
        let text = try AppleVectors.text("apple-library-test/legacyTransaction")
        let receipt = try LegacyTransactionReceipt(base64: text)
        #expect(receipt.transactionId == "33993399")
        #expect(receipt.originalTransactionId == nil)
        #expect(receipt.environment == nil)
        #expect(receipt.purchaseInfo == ["transaction-id": "33993399"])
        #expect(try StoreKitReceipt(base64: text).requireTransactionId() == "33993399")
    }

    @Test func sandboxStyleReceipt() throws {
        let info = """
            {
            \t"original-purchase-date-pst" = "2012-04-30 08:05:55 America/Los_Angeles";
            \t"original-transaction-id" = "1000000046178817";
            \t"bvrs" = "20120427";
            \t"transaction-id" = "1000000046178818";
            \t"quantity" = "1";
            \t"product-id" = "com.example.monthly";
            \t"bid" = "com.example";
            \t"escaped" = "a \\"quoted\\" word, a tab\\t, \\U00e9, \\101 and caf\u{e9}";
            }
            """
        let base64 = ReceiptFixture.legacyReceipt(
            purchaseInfo: info, outerExtra: "\t\"environment\" = \"Sandbox\";\n\t\"pod\" = \"100\";\n")
        let receipt = try LegacyTransactionReceipt(base64: base64)
        #expect(receipt.transactionId == "1000000046178818")
        #expect(receipt.originalTransactionId == "1000000046178817")
        #expect(receipt.productId == "com.example.monthly")
        #expect(receipt.bundleId == "com.example")
        #expect(receipt.environment == "Sandbox")
        #expect(receipt.purchaseInfo["escaped"] == "a \"quoted\" word, a tab\t, \u{e9}, A and caf\u{e9}")
        #expect(receipt.purchaseInfo.count == 8)
        #expect(try StoreKitReceipt(base64: base64) == .transaction(receipt))
    }

    @Test func malformedLegacyReceiptsAreRefused() {
        func outer(_ text: String) -> String { Data(text.utf8).base64EncodedString() }
        let goodInfo = Data("{\"transaction-id\" = \"1\";}".utf8).base64EncodedString()
        let cases: [(String, ReceiptError.Reason, String)] = [
            ("not base64", .notBase64, "{not base64}"),
            ("empty", .malformedLegacyReceipt, ""),
            ("no purchase-info", .malformedLegacyReceipt, outer("{\"pod\" = \"1\";}")),
            ("purchase-info not base64", .malformedLegacyReceipt, outer("{\"purchase-info\" = \"{}\";}")),
            (
                "no transaction-id", .malformedLegacyReceipt,
                ReceiptFixture.legacyReceipt(purchaseInfo: "{\"bid\" = \"x\";}")
            ),
            (
                "empty transaction-id", .malformedLegacyReceipt,
                ReceiptFixture.legacyReceipt(purchaseInfo: "{\"transaction-id\" = \"\";}")
            ),
            ("unquoted value", .malformedLegacyReceipt, outer("{\"purchase-info\" = \(goodInfo);}")),
            ("missing semicolon", .malformedLegacyReceipt, outer("{\"purchase-info\" = \"\(goodInfo)\"}")),
            (
                "duplicate key", .malformedLegacyReceipt,
                outer("{\"purchase-info\" = \"\(goodInfo)\"; \"purchase-info\" = \"\(goodInfo)\";}")
            ),
            ("text after the dictionary", .malformedLegacyReceipt, outer("{\"purchase-info\" = \"\(goodInfo)\";} x")),
            ("nested dictionary", .malformedLegacyReceipt, outer("{\"purchase-info\" = {\"a\" = \"b\";};}")),
            ("unterminated string", .malformedLegacyReceipt, outer("{\"purchase-info\" = \"abc")),
            ("unknown escape", .malformedLegacyReceipt, outer("{\"purchase-info\" = \"\\q\";}")),
            ("comment", .malformedLegacyReceipt, outer("// c\n{\"purchase-info\" = \"\(goodInfo)\";}")),
            (
                "invalid UTF-8", .malformedLegacyReceipt,
                Data([0x7B, 0x22, 0xC3, 0x28, 0x22, 0x3D, 0x22, 0x22, 0x3B, 0x7D]).base64EncodedString()
            ),
        ]
        for (name, expected, base64) in cases {
            #expect(AppReceiptTests.reason { _ = try LegacyTransactionReceipt(base64: base64) } == expected, "\(name)")
        }
        // A legacy receipt is recognised by its first byte; anything else is read as an app receipt.
        #expect(AppReceiptTests.reason { _ = try StoreKitReceipt(base64: outer("  {}")) } == .malformedLegacyReceipt)
        #expect(AppReceiptTests.reason { _ = try StoreKitReceipt(base64: outer("[]")) } == .notPKCS7)
    }
}
