// libFuzzer entry point for the receipt parsers. Not part of the SwiftPM package: build.sh compiles
// it together with Sources/AppStoreServer/Receipts/*.swift (the parsers, which need only Foundation
// and SwiftASN1) into one module, so internal parsers are reachable too.

/// Feeds one input to every receipt parser. Any trap (bounds, overflow, precondition) or sanitizer
/// report is a finding; thrown `ReceiptError`s are the expected outcome for malformed input.
@_cdecl("LLVMFuzzerTestOneInput")
public func receiptFuzzerTestOneInput(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = start.map { Array(UnsafeRawBufferPointer(start: $0, count: count)) } ?? []
    // Both kinds, told apart by content, and each parser on its own.
    if let receipt = try? StoreKitReceipt(bytes: bytes) {
        _ = try? receipt.requireTransactionId()
    }
    if let receipt = try? AppReceipt(bytes: bytes) {
        _ = receipt.latestPurchase
    }
    _ = try? LegacyTransactionReceipt(bytes: bytes)
    // The same bytes as base64 text, and the inner parsers directly.
    let text = String(decoding: bytes, as: UTF8.self)
    _ = try? AppReceipt(base64: text)
    _ = try? OldStylePlist.dictionary(bytes)
    _ = ReceiptDate.parse(bytes[...])
    _ = try? ReceiptAttributes.parseSet(bytes[...], reason: .malformedPayload, location: .payload)
    return 0
}
