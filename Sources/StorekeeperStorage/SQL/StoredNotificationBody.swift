import Foundation
import StoreCore

/// A notification's body as `inbox_payloads.body` keeps it: as received, except that signed
/// tokens (compact JWS) whose header carries a certificate chain (`x5c`) are kept decoded, each
/// chain once.
///
/// Why: an App Store body is ~8.6 KB, of which 6.1 KB are the same certificate chain twice (in
/// the notification's header and in its transaction's), base64url-encoded once and twice. Stored
/// whole, every body went to PostgreSQL's TOAST table as five chunk rows with five index entries,
/// and filled two SQLite overflow pages: storing a 16-byte stand-in for the body instead took 13 %
/// of ingest's CPU per notification off on PostgreSQL (process and server, Benchmarks/README.md).
/// Kept this way an App Store body is about 2.7 KB, and its row fits a page.
///
/// The transformation only moves bytes: each part is given back byte for byte, and base64url (or
/// a certificate's base64) is kept decoded only where its text is the one canonical encoding of
/// its bytes. So any body, whatever it holds, reads back exactly as received; what is not a token
/// with a chain is kept as is. Layout (varint: unsigned LEB128):
///
///     stored   := body                                  -- as received, when it holds no such token
///                                                       -- and does not begin with a zero byte
///               | 00 00 body                            -- as received, beginning with a zero byte
///               | 00 01 document
///     document := piece* 00
///     piece    := 01 varint(n) byte{n}                  -- bytes as received
///               | 02 before chain after payload sig     -- a token whose chain is new in this body
///               | 03 before varint(i) after payload sig -- a token with the i-th chain (from 0) again
///     before, after, sig := varint(n) byte{n}           -- the header's JSON before and after its
///                                                       -- `x5c` array; the signature, decoded
///     chain    := 00 varint(n) byte{n}                  -- the `x5c` array's JSON as received
///               | 01 varint(k) (varint(n) byte{n}){k}   -- its k certificates, decoded: the array
///                                                       -- was `["<base64>","<base64>",…]`
///               | 02 varint(k) (varint(n) byte{n}){k}   -- the same, its slashes written `\/`
///     payload  := document                              -- the payload's JSON, its tokens kept so too
///
/// No JSON body begins with a zero byte, so a stored value beginning with anything else is a body
/// as received, as every body stored before this format (migration 19) is.
enum StoredNotificationBody {
    /// How deep tokens inside tokens' payloads are looked for (the App Store's notification holds
    /// its transaction and renewal info: depth 1).
    static let maximumDepth = 2

    /// What to store for `body`.
    static func encode(_ body: Data) -> Data {
        let encoded: [UInt8]? = body.withUnsafeBytes { raw in
            var encoder = Encoder(output: [0x00, 0x01])
            let tokens = encoder.document(raw.bindMemory(to: UInt8.self), depth: 0)
            return tokens > 0 ? encoder.output : nil
        }
        if let encoded { return Data(encoded) }
        return body.first == 0 ? Data([0x00, 0x00]) + body : body
    }

    /// The body as received, from what ``encode(_:)`` stored.
    static func decode(_ stored: Data) throws(StorageError) -> Data {
        guard stored.first == 0 else { return stored }
        guard stored.count >= 2 else { throw corrupt("a stored body ends after its first byte") }
        switch stored[stored.startIndex + 1] {
        case 0x00: return Data(stored.dropFirst(2))
        case 0x01:
            let decoded = stored.withUnsafeBytes { raw -> Result<[UInt8], StorageError> in
                var decoder = Decoder(input: raw.bindMemory(to: UInt8.self), position: 2)
                do throws(StorageError) {
                    let body = try decoder.document(depth: 0)
                    guard decoder.position == decoder.input.count else {
                        throw corrupt("a stored body has \(decoder.input.count - decoder.position) bytes after its end")
                    }
                    return .success(body)
                } catch {
                    return .failure(error)
                }
            }
            return Data(try decoded.get())
        case let format: throw corrupt("a stored body has the unknown format \(format)")
        }
    }

    /// A stored body that does not read back: changed by something other than Storekeeper, or damaged.
    fileprivate static func corrupt(_ detail: String) -> StorageError {
        StorageError(.corrupt, "inbox_payloads.body: \(detail)")
    }

    fileprivate enum Tag {
        static let end: UInt8 = 0x00
        static let literal: UInt8 = 0x01
        static let tokenWithNewChain: UInt8 = 0x02
        static let tokenWithChainAgain: UInt8 = 0x03
    }

    fileprivate enum ChainForm {
        static let text: UInt8 = 0x00
        static let certificates: UInt8 = 0x01
        static let certificatesEscapingSlashes: UInt8 = 0x02
    }

    /// A certificate as an `x5c` array holds it: padded base64, its slashes written `\/` or not.
    fileprivate static func certificateText(_ certificate: ArraySlice<UInt8>, slashesEscaped: Bool) -> [UInt8] {
        var url: [UInt8] = []
        certificate.withUnsafeBufferPointer { Base64URL.append($0, to: &url) }
        var text: [UInt8] = []
        text.reserveCapacity(url.count + url.count / 32 + 2)
        for byte in url {
            switch byte {
            case UInt8(ascii: "-"): text.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"):
                if slashesEscaped { text.append(backslash) }
                text.append(slash)
            default: text.append(byte)
            }
        }
        text.append(contentsOf: repeatElement(equals, count: (4 - url.count % 4) % 4))
        return text
    }

    fileprivate static let quote = UInt8(ascii: "\"")
    fileprivate static let dot = UInt8(ascii: ".")
    fileprivate static let backslash = UInt8(ascii: "\\")
    fileprivate static let slash = UInt8(ascii: "/")
    fileprivate static let equals = UInt8(ascii: "=")
    fileprivate static let chainKey = Array(#""x5c":["#.utf8)

    private struct Encoder {
        var output: [UInt8]
        var chains: [[UInt8]] = []

        /// Writes `bytes` as a document; returns how many tokens it kept decoded.
        mutating func document(_ bytes: UnsafeBufferPointer<UInt8>, depth: Int) -> Int {
            var tokens = 0
            var literalStart = 0
            var index = 0
            // Tokens are looked for between each quote and the next: a token holds no quote, and
            // where a pairing is not the JSON's own the bytes are only kept as they are.
            while let open = Self.firstIndex(of: quote, in: bytes, from: index) {
                guard let close = Self.firstIndex(of: quote, in: bytes, from: open + 1) else { break }
                if let token = token(UnsafeBufferPointer(rebasing: bytes[(open + 1)..<close]), depth: depth) {
                    literal(UnsafeBufferPointer(rebasing: bytes[literalStart...open]))
                    output.append(contentsOf: token)
                    tokens += 1
                    literalStart = close
                }
                index = close
            }
            literal(UnsafeBufferPointer(rebasing: bytes[literalStart...]))
            output.append(Tag.end)
            return tokens
        }

        /// The encoding of `text` as a token (without updating `output`), or nil if it is not a
        /// compact JWS with canonical base64url parts and a certificate chain in its header.
        mutating func token(_ text: UnsafeBufferPointer<UInt8>, depth: Int) -> [UInt8]? {
            // A JWS header is a JSON object: `{"` encodes as `ey`.
            guard text.count > 16, text[0] == UInt8(ascii: "e"), text[1] == UInt8(ascii: "y"),
                let firstDot = Self.firstIndex(of: dot, in: text, from: 0),
                let secondDot = Self.firstIndex(of: dot, in: text, from: firstDot + 1),
                Self.firstIndex(of: dot, in: text, from: secondDot + 1) == nil,
                let header = Base64URL.decodeCanonical(UnsafeBufferPointer(rebasing: text[..<firstDot])),
                let keyStart = header.firstRange(of: chainKey)?.lowerBound,
                let chainEnd = header[(keyStart + chainKey.count)...].firstIndex(of: UInt8(ascii: "]")),
                let payload = Base64URL.decodeCanonical(
                    UnsafeBufferPointer(rebasing: text[(firstDot + 1)..<secondDot])),
                let signature = Base64URL.decodeCanonical(UnsafeBufferPointer(rebasing: text[(secondDot + 1)...]))
            else { return nil }
            let chainStart = keyStart + chainKey.count - 1
            let chain = Array(header[chainStart...chainEnd])
            var token = Encoder(output: [], chains: chains)
            if let known = chains.firstIndex(of: chain) {
                token.output.append(Tag.tokenWithChainAgain)
                token.bytes(header[..<chainStart])
                token.varint(known)
            } else {
                token.output.append(Tag.tokenWithNewChain)
                token.bytes(header[..<chainStart])
                token.chain(chain)
                token.chains.append(chain)
            }
            token.bytes(header[(chainEnd + 1)...])
            payload.withUnsafeBufferPointer { payload in
                if depth < maximumDepth {
                    _ = token.document(payload, depth: depth + 1)
                } else {
                    token.literal(payload)
                    token.output.append(Tag.end)
                }
            }
            token.bytes(signature[...])
            chains = token.chains
            return token.output
        }

        /// An `x5c` array (its brackets included): its certificates decoded if it is a list of
        /// canonical base64 strings without spaces, as received otherwise.
        mutating func chain(_ text: [UInt8]) {
            if let (certificates, slashesEscaped) = Self.certificates(text) {
                output.append(slashesEscaped ? ChainForm.certificatesEscapingSlashes : ChainForm.certificates)
                varint(certificates.count)
                for certificate in certificates { bytes(certificate[...]) }
            } else {
                output.append(ChainForm.text)
                bytes(text[...])
            }
        }

        /// The certificates of `["<base64>",…]`, and whether its slashes are written `\/` (as
        /// Foundation's `JSONSerialization` writes them; Apple's own headers do not).
        static func certificates(_ text: [UInt8]) -> (certificates: [[UInt8]], slashesEscaped: Bool)? {
            guard text.count >= 2, text.first == UInt8(ascii: "["), text.last == UInt8(ascii: "]") else { return nil }
            let slashesEscaped = text.contains(backslash)
            guard text.count > 2 else { return ([], slashesEscaped) }
            return text.withUnsafeBufferPointer { text in
                // The elements between the brackets, split at each comma, none empty.
                let end = text.count - 1
                var start = 1
                var certificates: [[UInt8]] = []
                while true {
                    let elementEnd = firstIndex(of: UInt8(ascii: ","), in: text, from: start) ?? end
                    guard elementEnd - start >= 2, text[start] == quote, text[elementEnd - 1] == quote,
                        let certificate = certificate(
                            UnsafeBufferPointer(rebasing: text[(start + 1)..<(elementEnd - 1)]),
                            slashesEscaped: slashesEscaped)
                    else { return nil }
                    certificates.append(certificate)
                    guard elementEnd < end else { return (certificates, slashesEscaped) }
                    start = elementEnd + 1
                }
            }
        }

        /// A certificate from its canonical base64 (padded, zero trailing bits), decoded by table:
        /// Foundation's `Data(base64Encoded:)` and the re-encoding that checks it were 4 % of the
        /// SQLite ingest profile, most of the writer's encoding of a body; a byte-by-byte translation
        /// to base64url first, and the chain's split, were then half of what remained.
        static func certificate(_ written: UnsafeBufferPointer<UInt8>, slashesEscaped: Bool) -> [UInt8]? {
            guard slashesEscaped else { return Base64URL.decodeCanonicalPadded(written) }
            // Every slash written `\/`, none bare: without the backslashes, the text is the base64.
            var unescaped: [UInt8] = []
            unescaped.reserveCapacity(written.count)
            var index = 0
            while index < written.count {
                if written[index] == backslash {
                    guard index + 1 < written.count, written[index + 1] == slash else { return nil }
                    index += 1
                } else if written[index] == slash {
                    return nil
                }
                unescaped.append(written[index])
                index += 1
            }
            return unescaped.withUnsafeBufferPointer(Base64URL.decodeCanonicalPadded)
        }

        mutating func literal(_ bytes: UnsafeBufferPointer<UInt8>) {
            guard !bytes.isEmpty else { return }
            output.append(Tag.literal)
            varint(bytes.count)
            output.append(contentsOf: bytes)
        }

        mutating func bytes(_ bytes: ArraySlice<UInt8>) {
            varint(bytes.count)
            output.append(contentsOf: bytes)
        }

        mutating func varint(_ value: Int) {
            var value = UInt(value)
            while value >= 0x80 {
                output.append(UInt8(truncatingIfNeeded: value) | 0x80)
                value >>= 7
            }
            output.append(UInt8(value))
        }

        static func firstIndex(of byte: UInt8, in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
            guard start < bytes.count, let base = bytes.baseAddress else { return nil }
            guard let found = memchr(base + start, Int32(byte), bytes.count - start) else { return nil }
            return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
        }
    }

    private struct Decoder {
        let input: UnsafeBufferPointer<UInt8>
        var position: Int
        var chains: [ArraySlice<UInt8>] = []

        init(input: UnsafeBufferPointer<UInt8>, position: Int) {
            self.input = input
            self.position = position
        }

        mutating func document(depth: Int) throws(StorageError) -> [UInt8] {
            guard depth <= maximumDepth + 1 else { throw corrupt("a stored body nests too deep") }
            var output: [UInt8] = []
            while true {
                switch try byte() {
                case Tag.end: return output
                case Tag.literal: output.append(contentsOf: try bytes())
                case let tag where tag == Tag.tokenWithNewChain || tag == Tag.tokenWithChainAgain:
                    var header = Array(try bytes())
                    if tag == Tag.tokenWithNewChain {
                        let chain = try self.chain()
                        chains.append(chain)
                        header.append(contentsOf: chain)
                    } else {
                        let index = try varint()
                        guard index < chains.count else {
                            throw corrupt("a stored body names certificate chain \(index) of \(chains.count)")
                        }
                        header.append(contentsOf: chains[index])
                    }
                    header.append(contentsOf: try bytes())
                    let payload = try document(depth: depth + 1)
                    let signature = try bytes()
                    header.withUnsafeBufferPointer { Base64URL.append($0, to: &output) }
                    output.append(dot)
                    payload.withUnsafeBufferPointer { Base64URL.append($0, to: &output) }
                    output.append(dot)
                    signature.withUnsafeBufferPointer { Base64URL.append($0, to: &output) }
                case let tag: throw corrupt("a stored body has the unknown part \(tag)")
                }
            }
        }

        /// An `x5c` array's JSON, as received.
        mutating func chain() throws(StorageError) -> ArraySlice<UInt8> {
            switch try byte() {
            case ChainForm.text: return try bytes()
            case let form where form == ChainForm.certificates || form == ChainForm.certificatesEscapingSlashes:
                let count = try varint()
                var text: [UInt8] = [UInt8(ascii: "[")]
                for index in 0..<count {
                    if index > 0 { text.append(UInt8(ascii: ",")) }
                    text.append(quote)
                    text.append(
                        contentsOf: certificateText(
                            try bytes(), slashesEscaped: form == ChainForm.certificatesEscapingSlashes))
                    text.append(quote)
                }
                text.append(UInt8(ascii: "]"))
                return text[...]
            case let form: throw corrupt("a stored body has the unknown certificate chain form \(form)")
            }
        }

        mutating func byte() throws(StorageError) -> UInt8 {
            guard position < input.count else { throw corrupt("a stored body ends within a part") }
            defer { position += 1 }
            return input[position]
        }

        mutating func bytes() throws(StorageError) -> ArraySlice<UInt8> {
            let count = try varint()
            guard count <= input.count - position else {
                throw corrupt("a stored body's part of \(count) bytes runs past its end")
            }
            defer { position += count }
            return ArraySlice(UnsafeBufferPointer(rebasing: input[position..<(position + count)]))
        }

        mutating func varint() throws(StorageError) -> Int {
            var value = 0
            var shift = 0
            while true {
                let byte = try byte()
                value |= Int(byte & 0x7F) << shift
                if byte < 0x80 { return value }
                shift += 7
                guard shift < 32 else { throw corrupt("a stored body has a length over 2^32") }
            }
        }
    }
}
