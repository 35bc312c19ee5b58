package gate

import "testing"

func TestClassOf(t *testing.T) {
	tests := []struct {
		v    string
		want valueClass
	}{
		// Links and addresses.
		{"https://attacker.example/?d=1", classURL},
		{"HTTP://x.example", classURL},
		{"mark@attacker.example", classEmail},
		{"first.last+tag@mail.co.uk", classEmail},
		{"почта@пример.рф", classEmail},
		{"user@localhost", classNone},
		{"@handle", classNone},
		{"a@b@c.example", classNone},
		// Phone numbers.
		{"+49 30 1234567", classPhone},
		{"+15551234567", classPhone},
		{"+1 (555) 123-4567", classPhone},
		{"+7 916 123-45-67", classPhone},
		{"+44 20 7946 0958", classPhone},
		{"(555) 234-5678", classPhone},
		{"1 (555) 234-5678", classPhone},
		{"01.02.2024 10.30", classNone},
		{"8 (916) 2024-05-20", classNone},
		{"12345-67890", classNone},
		{"0000-0000-0000", classNone},
		{"1000000000.0", classNone},
		{"555-123-4567", classNone}, // no exchange starts with 1
		{"555.234.5678", classPhone},
		{"020 7946 0958", classPhone},
		{"8 (916) 123-45-67", classPhone},
		{"01 23 45 67 89", classPhone},
		{"0049 30 1234567", classPhone},
		{"+0 555 1234567", classNone},
		{"+123", classNone},
		// IBANs, with their check digits.
		{"DE89370400440532013000", classAccount},
		{"DE89 3704 0044 0532 0130 00", classAccount},
		{"gb29 nwbk 6016 1331 9268 19", classAccount},
		{"CH9300762011623852957", classAccount},
		{"DE88370400440532013000", classNone}, // a check digit off
		{"DE8937040044053201300", classNone},  // Germany's IBANs have 22 characters
		{"UK12345678901234567890", classNone}, // no such country, no valid check
		{"DE89  3704 0044 0532 0130 00", classNone},
		// Card numbers, with their Luhn digit.
		{"4111 1111 1111 1111", classCard},
		{"4111-1111-1111-1111", classCard},
		{"5555555555554444", classCard},
		{"378282246310005", classCard},
		{"4111 1111 1111 1112", classNone},
		{"1234567812345670", classNone}, // Luhn holds, no network starts with 1
		// Dates, times, amounts, ids and codes are none.
		{"2024-05-20", classNone},
		{"2024-05-20T13:45:00Z", classNone},
		{"20.05.2024", classNone},
		{"05/20/2024", classNone},
		{"2024-05-20 - 2024-05-22", classNone},
		{"20240520", classNone},
		{"13:45", classNone},
		{"13.45", classNone},
		{"1345-1530", classNone},
		{"1 250 000", classNone},
		{"125 000 000", classNone},
		{"1.250.000.000", classNone},
		{"1,250.00", classNone},
		{"98.70", classNone},
		{"-500", classNone},
		{"1700000000000", classNone},
		{"5551234567", classNone},
		{"123456789", classNone},
		{"2024-000123", classNone},
		{"192.168.100.200", classNone},
		{"10.0.100.200", classNone},
		{"1.2.3.4.5.6.7.8.9", classNone},
		{"#W2378156", classNone},
		{"ZFA04Y", classNone},
		{"ORD-2024-000123", classNone},
		{"HAT123", classNone},
		{"978-3-16-148410-0", classNone}, // an ISBN
		{"v1.2.3", classNone},
		{"credit_card_4421486", classNone},
		{"AB12CDEFGHIJKLMN", classNone},
		{"meet at 10:00, room 4", classNone},
	}
	for _, tt := range tests {
		if got := classOf(tt.v); got != tt.want {
			t.Errorf("classOf(%q) = %s, want %s", tt.v, got, tt.want)
		}
	}
}
