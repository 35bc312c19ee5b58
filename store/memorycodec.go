package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Backends may keep memory in this compact binary form rather than JSON
// (the embedded store and Redis do): it is read and written on every turn,
// and this form decodes with two allocations plus one per slot (the text
// of all strings shares one copy of the record), where JSON needs several
// per message.
//
// Layout, all integers varint-encoded:
//
//	format(1 byte) started updated default messages_until
//	    count { role text name source at }* count { key value until }*
//
// where a string is length + bytes and a time is Unix seconds (signed) +
// nanoseconds. Times come back in UTC. default is when the parts without a
// time of their own (a zero until) end. Format 1, written before the parts
// had lifetimes of their own, lacks default, messages_until and the slots'
// until; it still decodes (its parts then end with the record).
const (
	memoryFormat   = 2
	memoryFormatV1 = 1
)

// ErrCorruptMemory is the error of a memory record that does not decode.
var ErrCorruptMemory = errors.New("corrupt memory record")

// AppendConversation appends c in the compact form to b, with def as the
// end of every part that has no time of its own (see Conversation.Expiry).
// The first byte is never '{', so a reader can tell it from JSON.
func AppendConversation(b []byte, c *Conversation, def time.Time) []byte {
	b = append(b, memoryFormat)
	b = appendTime(b, c.StartedAt)
	b = appendTime(b, c.UpdatedAt)
	b = appendTime(b, def)
	b = appendTime(b, c.MessagesUntil)
	b = binary.AppendUvarint(b, uint64(len(c.Messages)))
	for i := range c.Messages {
		m := &c.Messages[i]
		b = appendString(b, m.Role)
		b = appendString(b, m.Text)
		b = appendString(b, m.Name)
		b = appendString(b, m.Source)
		b = appendTime(b, m.At)
	}
	b = binary.AppendUvarint(b, uint64(len(c.Slots)))
	for k, v := range c.Slots {
		b = appendString(b, k)
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
		b = appendTime(b, c.SlotsUntil[k])
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

// DecodeConversation decodes a record AppendConversation wrote, and the
// def it was written with (zero for format 1). The returned strings are
// substrings of data.
func DecodeConversation(data string) (c Conversation, def time.Time, err error) {
	if len(data) == 0 || (data[0] != memoryFormat && data[0] != memoryFormatV1) {
		return c, def, fmt.Errorf("%w: unknown format", ErrCorruptMemory)
	}
	v2 := data[0] == memoryFormat
	d := decoder{s: data[1:]}
	c.StartedAt = d.time()
	c.UpdatedAt = d.time()
	if v2 {
		def = d.time()
		c.MessagesUntil = d.time()
	}
	// Every message takes at least 6 bytes; checking first keeps a corrupt
	// count from allocating a huge slice.
	if n := d.uvarint(); n > 0 && n <= uint64(len(d.s)/6) {
		c.Messages = make([]Message, n)
		for i := range c.Messages {
			m := &c.Messages[i]
			m.Role = d.str()
			m.Text = d.str()
			m.Name = d.str()
			m.Source = d.str()
			m.At = d.time()
		}
	} else if n > 0 {
		d.err = ErrCorruptMemory
	}
	if n := d.uvarint(); n > 0 && n <= uint64(len(d.s)/2) {
		c.Slots = make(map[string]json.RawMessage, n)
		if v2 {
			c.SlotsUntil = make(map[string]time.Time, n)
		}
		for range n {
			k := d.str()
			c.Slots[k] = json.RawMessage(d.str())
			if v2 {
				if u := d.time(); !u.IsZero() {
					c.SlotsUntil[k] = u
				}
			}
		}
	} else if n > 0 {
		d.err = ErrCorruptMemory
	}
	if d.err != nil || len(d.s) != 0 {
		return Conversation{}, time.Time{}, ErrCorruptMemory
	}
	return c, def, nil
}

// decoder reads from a string so that decoded strings are substrings (no
// copies); the first error sticks and later reads return zero values.
type decoder struct {
	s   string
	err error
}

func (d *decoder) uvarint() uint64 {
	var v uint64
	for i := 0; i < len(d.s) && i < binary.MaxVarintLen64; i++ {
		c := d.s[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			d.s = d.s[i+1:]
			return v
		}
	}
	d.err = ErrCorruptMemory
	d.s = ""
	return 0
}

func (d *decoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *decoder) str() string {
	n := d.uvarint()
	if n > uint64(len(d.s)) {
		d.err = ErrCorruptMemory
		d.s = ""
		return ""
	}
	v := d.s[:n]
	d.s = d.s[n:]
	return v
}

func (d *decoder) time() time.Time {
	sec := d.varint()
	nsec := d.uvarint()
	if d.err != nil || nsec >= 1e9 {
		d.err = ErrCorruptMemory
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}
