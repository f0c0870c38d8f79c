/**
 * A streaming XML tokenizer just large enough to check what a DOCX part *means*: it reads decoded
 * text in chunks of any size, keeps a constant amount of state between them, and visits every
 * character once (searches jump with sticky regexes, never backtrack), so its work is linear in
 * the part's length whatever the part holds.
 *
 * Written here rather than taken from a library: the XML parser the project has
 * (fast-xml-parser) needs the whole part in memory as one string and builds a tree of it (a 64 MiB
 * part would take gigabytes), and it tolerates constructs that other parsers read differently.
 * This one does not build anything: it reports start tags (attribute values decoded: character
 * references and the five predefined entities resolved, as an XML processor sees them) and the
 * text of chosen elements, and refuses — with `XmlRefused` — what LibreOffice's parser could read
 * in a way the checks would not see: a DTD or entity declaration, an undefined entity, a NUL
 * character, markup that is not well-formed.
 */
export class XmlRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'XmlRefused';
  }
}

export interface XmlScanHandlers {
  /** Local names (the part after any `prefix:`) of the elements whose attributes `onStartTag` gets. */
  attributesOf: ReadonlySet<string>;
  /** Local names of the elements whose text (the first 1,024 characters) `onText` gets. */
  textOf?: ReadonlySet<string>;
  onStartTag(name: string, attributes: Array<[name: string, value: string]>): void;
  onText?(name: string, text: string): void;
}

const enum State {
  Text,
  Reference,
  Open,
  Name,
  InTag,
  AttributeName,
  AfterAttributeName,
  BeforeValue,
  Value,
  EndTag,
  Bang,
  Comment,
  CData,
  Instruction,
}

/** The longest element or attribute name (libxml2's own limit). */
const MAX_NAME = 50_000;
/** The longest attribute value kept (only for the elements asked for). */
const MAX_VALUE = 1024 * 1024;
const MAX_TEXT = 1024;

const PREDEFINED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };
const TEXT_STOP = /[<&]/g;
const VALUE_STOP = { '"': /["&<]/g, "'": /['&<]/g } as const;
const isSpace = (c: string) => c === ' ' || c === '\n' || c === '\t' || c === '\r';
export const localName = (name: string) => name.slice(name.indexOf(':') + 1);

export class XmlScanner {
  private state = State.Text;
  /** Where a reference (`&…;`) returns to: text or an attribute value. */
  private referenceIn: State.Text | State.Value = State.Text;
  private reference = '';
  private name = '';
  private attributes: Array<[string, string]> | null = null;
  private attributeName = '';
  private value = '';
  private quote: '"' | "'" = '"';
  private selfClosing = false;
  /** Characters of `<!…` seen so far, to tell a comment or CDATA from a declaration. */
  private bang = '';
  /** How much of a closing `-->`, `]]>` or `?>` was just seen. */
  private closing = 0;
  private capturing: string | null = null;
  private captured = '';

  constructor(private readonly handlers: XmlScanHandlers) {}

  write(chunk: string): void {
    if (chunk.includes('\0')) throw new XmlRefused('holds a NUL character, which XML does not allow');
    let i = 0;
    const n = chunk.length;
    while (i < n) {
      switch (this.state) {
        case State.Text: {
          TEXT_STOP.lastIndex = i;
          const stop = TEXT_STOP.exec(chunk);
          const end = stop ? stop.index : n;
          if (this.capturing !== null) this.capture(chunk.slice(i, end));
          if (!stop) return;
          i = end + 1;
          if (stop[0] === '&') this.startReference(State.Text);
          else {
            this.flushText();
            this.state = State.Open;
          }
          break;
        }
        case State.Reference: {
          const c = chunk[i++]!;
          if (c !== ';') {
            this.reference += c;
            if (this.reference.length > 32) throw new XmlRefused('has an "&" that starts no entity reference');
            break;
          }
          const resolved = resolveReference(this.reference);
          if (this.referenceIn === State.Text) {
            if (this.capturing !== null) this.capture(resolved);
          } else this.keepValue(resolved);
          this.state = this.referenceIn;
          break;
        }
        case State.Open: {
          const c = chunk[i++]!;
          if (c === '!') {
            this.bang = '';
            this.state = State.Bang;
          } else if (c === '?') {
            this.closing = 0;
            this.state = State.Instruction;
          } else if (c === '/') this.state = State.EndTag;
          else if (isSpace(c) || c === '>' || c === '<' || c === '=' || c === '"' || c === "'") throw new XmlRefused('has a "<" that starts no tag');
          else {
            this.name = c;
            this.state = State.Name;
          }
          break;
        }
        case State.Name: {
          const c = chunk[i]!;
          if (c === '<' || c === '=' || c === '"' || c === "'") throw new XmlRefused('has a malformed tag name');
          if (isSpace(c) || c === '/' || c === '>') {
            this.attributes = this.handlers.attributesOf.has(localName(this.name)) ? [] : null;
            this.selfClosing = false;
            this.state = State.InTag;
          } else {
            this.name += c;
            if (this.name.length > MAX_NAME) throw new XmlRefused(`has a tag name longer than ${MAX_NAME} characters`);
            i++;
          }
          break;
        }
        case State.InTag: {
          const c = chunk[i++]!;
          if (c === '>') this.endStartTag();
          else if (this.selfClosing) throw new XmlRefused('has a "/" inside a tag');
          else if (c === '/') this.selfClosing = true;
          else if (isSpace(c)) break;
          else if (c === '<' || c === '=' || c === '"' || c === "'") throw new XmlRefused(`has a malformed <${this.name}> tag`);
          else {
            this.attributeName = c;
            this.state = State.AttributeName;
          }
          break;
        }
        case State.AttributeName: {
          const c = chunk[i++]!;
          if (c === '=') this.state = State.BeforeValue;
          else if (isSpace(c)) this.state = State.AfterAttributeName;
          else if (c === '>' || c === '/' || c === '<' || c === '"' || c === "'") throw new XmlRefused(`has an attribute without a value in <${this.name}>`);
          else {
            this.attributeName += c;
            if (this.attributeName.length > MAX_NAME) throw new XmlRefused(`has an attribute name longer than ${MAX_NAME} characters`);
          }
          break;
        }
        case State.AfterAttributeName: {
          const c = chunk[i++]!;
          if (c === '=') this.state = State.BeforeValue;
          else if (!isSpace(c)) throw new XmlRefused(`has an attribute without a value in <${this.name}>`);
          break;
        }
        case State.BeforeValue: {
          const c = chunk[i++]!;
          if (c === '"' || c === "'") {
            this.quote = c;
            this.value = '';
            this.state = State.Value;
          } else if (!isSpace(c)) throw new XmlRefused(`has an attribute value without quotes in <${this.name}>`);
          break;
        }
        case State.Value: {
          const search = VALUE_STOP[this.quote];
          search.lastIndex = i;
          const stop = search.exec(chunk);
          const end = stop ? stop.index : n;
          this.keepValue(chunk.slice(i, end));
          if (!stop) return;
          i = end + 1;
          if (stop[0] === '&') this.startReference(State.Value);
          else if (stop[0] === '<') throw new XmlRefused(`has a "<" inside an attribute value of <${this.name}>`);
          else {
            this.attributes?.push([this.attributeName, this.value]);
            this.value = '';
            this.state = State.InTag;
          }
          break;
        }
        case State.EndTag: {
          const end = chunk.indexOf('>', i);
          if (end < 0) return;
          i = end + 1;
          this.state = State.Text;
          break;
        }
        case State.Bang: {
          this.bang += chunk[i++]!;
          if (this.bang === '--') {
            this.closing = 0;
            this.state = State.Comment;
          } else if (this.bang === '[CDATA[') {
            this.closing = 0;
            this.state = State.CData;
          } else if (!'--'.startsWith(this.bang) && !'[CDATA['.startsWith(this.bang)) {
            throw new XmlRefused(/^[A-Za-z]/.test(this.bang) ? 'declares a DTD or entities' : 'has a "<!" that starts no comment or CDATA section');
          }
          break;
        }
        case State.Comment:
        case State.CData: {
          // `-->` or `]]>`: two of the mark (or more) followed by `>`.
          const mark = this.state === State.Comment ? '-' : ']';
          const c = chunk[i++]!;
          if (c === mark) this.closing++;
          else if (c === '>' && this.closing >= 2) this.state = State.Text;
          else this.closing = 0;
          break;
        }
        case State.Instruction: {
          const c = chunk[i++]!;
          if (c === '>' && this.closing === 1) this.state = State.Text;
          else this.closing = c === '?' ? 1 : 0;
          break;
        }
      }
    }
  }

  /** The part ended: it must not end inside markup. */
  end(): void {
    if (this.state !== State.Text) throw new XmlRefused('ends inside a tag, comment or reference');
    this.flushText();
  }

  private startReference(from: State.Text | State.Value): void {
    this.reference = '';
    this.referenceIn = from;
    this.state = State.Reference;
  }

  private keepValue(text: string): void {
    if (this.attributes === null) return;
    // Attribute-value normalisation: a tab, newline or carriage return is read as a space.
    this.value += text.replace(/[\t\n\r]/g, ' ');
    if (this.value.length > MAX_VALUE) throw new XmlRefused(`has an attribute value longer than ${MAX_VALUE} characters in <${this.name}>`);
  }

  private endStartTag(): void {
    if (this.attributes !== null) this.handlers.onStartTag(this.name, this.attributes);
    this.attributes = null;
    this.state = State.Text;
    if (!this.selfClosing && this.handlers.textOf?.has(localName(this.name))) {
      this.capturing = this.name;
      this.captured = '';
    }
  }

  private capture(text: string): void {
    if (this.captured.length < MAX_TEXT) this.captured += text.slice(0, MAX_TEXT - this.captured.length);
  }

  private flushText(): void {
    if (this.capturing === null) return;
    this.handlers.onText?.(this.capturing, this.captured);
    this.capturing = null;
    this.captured = '';
  }
}

/** The text an entity or character reference stands for; only the five predefined entities exist without a DTD. */
function resolveReference(reference: string): string {
  const predefined = PREDEFINED[reference];
  if (predefined !== undefined) return predefined;
  const match = /^#(?:([0-9]{1,7})|x([0-9A-Fa-f]{1,6}))$/.exec(reference);
  if (!match) throw new XmlRefused(`uses the entity "&${reference.slice(0, 32)};", which is not defined (only &lt; &gt; &amp; &quot; &apos; and character references are)`);
  const code = match[1] !== undefined ? Number(match[1]) : parseInt(match[2]!, 16);
  const isChar = code === 0x9 || code === 0xa || code === 0xd || (code >= 0x20 && code <= 0xd7ff) || (code >= 0xe000 && code <= 0xfffd) || (code >= 0x10000 && code <= 0x10ffff);
  if (!isChar) throw new XmlRefused(`has a character reference "&${reference};" to a character XML does not allow`);
  return String.fromCodePoint(code);
}
