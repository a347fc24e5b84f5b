/// Pages of a paged App Store endpoint as one asynchronous sequence of elements, fetched lazily:
/// the next page is requested only when the previous one is used up.
public struct Paged<Element: Sendable>: AsyncSequence, Sendable {
    /// Fetches the page after `token` (nil: the first) and returns its elements and the next token
    /// (nil: no more pages).
    let fetch: @Sendable (_ token: String?) async throws -> (elements: [Element], next: String?)

    public func makeAsyncIterator() -> Iterator {
        Iterator(fetch: fetch)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let fetch: @Sendable (String?) async throws -> (elements: [Element], next: String?)
        var buffer: [Element] = []
        var index = 0
        var token: String?
        var finished = false

        init(fetch: @escaping @Sendable (String?) async throws -> (elements: [Element], next: String?)) {
            self.fetch = fetch
        }

        public mutating func next() async throws -> Element? {
            while index == buffer.count {
                guard !finished else { return nil }
                let page = try await fetch(token)
                buffer = page.elements
                index = 0
                token = page.next
                finished = page.next == nil
            }
            defer { index += 1 }
            return buffer[index]
        }
    }
}
