"""Where each key of a TOML text is written: tomllib gives positions only for
syntax errors, and a scenario's other errors must name their line too.

key_lines(text) maps every key path to its line (1-based); array elements
and array-of-tables entries appear as integer indices in the path:
("conditions", 1, "senders", "sender1", "rate"). The text must already have
parsed with tomllib: this scanner follows the grammar loosely, it checks
nothing.
"""

BARE = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def key_lines(text):
    return _Scanner(text).run()


def line_of(lines, path):
    """The line of path, or of its longest prefix that has one (a key inside an
    inline table or a value from an array shares its parent's line)."""
    path = tuple(path)
    for n in range(len(path), 0, -1):
        if path[:n] in lines:
            return lines[path[:n]]
    return None


class _Scanner:
    def __init__(self, text):
        self.s = text
        self.i = 0
        self.line = 1
        self.lines = {}
        self.arrays = {}  # array-of-tables path -> index of its last entry

    def peek(self, n=1):
        return self.s[self.i:self.i + n]

    def advance(self, n=1):
        self.line += self.s.count("\n", self.i, self.i + n)
        self.i += n

    def skip_space(self, newlines):
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in " \t\r" or (newlines and c == "\n"):
                self.advance()
            elif c == "#":
                while self.i < len(self.s) and self.s[self.i] != "\n":
                    self.i += 1
            else:
                return

    def run(self):
        table = ()
        while True:
            self.skip_space(newlines=True)
            if self.i >= len(self.s):
                return self.lines
            if self.peek(2) == "[[":
                self.advance(2)
                line, path = self.line, self.header_path("]]")
                self.arrays[path] = self.arrays.get(path, -1) + 1
                table = path + (self.arrays[path],)
                self.lines.setdefault(path, line)
                self.lines[table] = line
            elif self.peek() == "[":
                self.advance()
                line, path = self.line, self.header_path("]")
                table = path
                self.record(path, line)
            else:
                line, key = self.line, self.key()
                self.record(table + key, line)
                self.value(table + key)

    def record(self, path, line):
        for n in range(len(path) - 1, 0, -1):  # a dotted key also defines its parents
            self.lines.setdefault(path[:n], line)
        self.lines.setdefault(path, line)

    def header_path(self, close):
        """Parts of [a.b] with the index of each array of tables on the way."""
        parts = self.key_parts(close)
        path = ()
        for n, part in enumerate(parts, 1):
            path += (part,)
            # an array of tables on the way means its last entry; [[a]] itself
            # gets its new index from the caller
            if path in self.arrays and not (close == "]]" and n == len(parts)):
                path += (self.arrays[path],)
        self.advance(len(close))
        return path

    def key(self):
        parts = tuple(self.key_parts("="))
        self.advance()  # "="
        return parts

    def key_parts(self, stop):
        parts = []
        while True:
            self.skip_space(newlines=False)
            c = self.peek()
            if c in ('"', "'"):
                parts.append(self.string())
            else:
                start = self.i
                while self.i < len(self.s) and self.s[self.i] in BARE:
                    self.i += 1
                parts.append(self.s[start:self.i])
            self.skip_space(newlines=False)
            if self.peek() != ".":
                if self.s.startswith(stop, self.i) or self.i >= len(self.s):
                    return parts
                self.advance()  # malformed: move on rather than loop
                return parts
            self.advance()

    def string(self):
        """A string at i; returns its text (escapes left as written)."""
        q = self.peek()
        if self.peek(3) == q * 3:
            end = self.s.find(q * 3, self.i + 3)
            end = len(self.s) if end < 0 else end
            while self.s.startswith(q, end + 3):  # up to two quotes may close it
                end += 1
            text = self.s[self.i + 3:end]
            self.advance(end + 3 - self.i)
            return text
        j = self.i + 1
        while j < len(self.s) and self.s[j] != q and self.s[j] != "\n":
            j += 2 if (q == '"' and self.s[j] == "\\") else 1
        text = self.s[self.i + 1:j]
        self.advance(j + 1 - self.i)
        return text

    def value(self, path):
        self.skip_space(newlines=False)
        c = self.peek()
        if c in ('"', "'"):
            self.string()
        elif c == "[":
            self.advance()
            index = 0
            while True:
                self.skip_space(newlines=True)
                if self.peek() in ("]", ""):
                    self.advance()
                    return
                self.record(path + (index,), self.line)
                self.value(path + (index,))
                index += 1
                self.skip_space(newlines=True)
                if self.peek() == ",":
                    self.advance()
        elif c == "{":
            self.advance()
            while True:
                self.skip_space(newlines=False)
                if self.peek() in ("}", ""):
                    self.advance()
                    return
                line, key = self.line, self.key()
                self.record(path + key, line)
                self.value(path + key)
                self.skip_space(newlines=False)
                if self.peek() == ",":
                    self.advance()
        else:
            while self.i < len(self.s) and self.s[self.i] not in ",]}\n#":
                self.i += 1
