package intent

// The words of Claims: the outcomes it knows by name, the general words
// of completion, and the words its context rules read. Russian, English
// and some German; a deployment adds its own patterns to an outcome.

// Outcomes are the built-in outcomes a tool may declare (tool.Spec
// Outcomes), each with its patterns. Past and passive forms assert;
// future, infinitive and conditional ones («вернём», "will refund") are
// not in the patterns, and the context rules drop the rest.
var Outcomes = map[string][]string{
	"refund_done": join(
		both("возврат*|рефанд*|refund*|ruckerstattung*|erstattung*|ruckzahlung*",
			"выполнен~|выполнил*|оформлен~|оформил*|проведен~|провел*|осуществлен~|осуществил*|произведен~|произвел*|сделан~|сделал*|"+
				"завершен~|завершил*|исполнен~|исполнил*|одобрен~|одобрил*|подтвержден~|прошел|прошла|прошли|"+
				"issued|processed|completed|complete|done|made|sent|approved|succeeded|successful|finalized|executed|confirmed|credited|paid|"+
				"durchgefuhrt|erfolgt|veranlasst|abgeschlossen|bearbeitet|ausgefuhrt|uberwiesen|gebucht|angewiesen"),
		both("деньг*|средств*|оплат*|платеж*|сумм*|рубл*|руб|money|funds|payment|amount|charge|geld|betrag|zahlung",
			"вернул*|возвратил*|зачислен~|returned|reversed|credited|erstattet|zuruckerstattet|zuruckgezahlt|zuruckuberwiesen|zuruckgebucht"),
		[]string{"возвращен~", "refunded", "erstattet", "zuruckerstattet", "zuruckuberwiesen", "refund* ... went|gone through"},
	),
	"access_restored": join(
		both("доступ*|аккаунт*|кабинет*|access|account|zugang|zugriff|konto",
			"восстановлен~|восстановил*|открыт~|открыл*|вернул*|возвращен~|предоставлен~|предоставил*|разблокирован~|разблокировал*|"+
				"выдан~|выдал*|появил*|заработал*|работает|есть|"+
				"restored|reinstated|reenabled|unlocked|granted|enabled|back|working|fixed|opened|open|regained|"+
				"wiederhergestellt|freigeschaltet|entsperrt|aktiviert"),
		[]string{"have|has|got|regained access"},
	),
	"subscription_active": join(
		both("подписк*|тариф*|subscription*|membership*|plan|abo|abonnement*",
			"активн*|активен|активирован~|активировал*|подключен~|подключил*|продлен~|продлил*|восстановлен~|восстановил*|возобновлен~|возобновил*|"+
				"включен~|включил*|действует|действительн*|работает|"+
				"active|activated|reactivated|enabled|live|working|restored|renewed|reinstated|"+
				"aktiv|aktiviert|freigeschaltet"),
	),
	"payment_confirmed": join(
		both("платеж*|оплат*|списани*|транзакци*|payment*|charge|transaction*|zahlung*",
			"подтвержден~|подтвердил*|прошел|прошла|прошло|получен~|получил*|зачислен~|проведен~|провел*|успешн*|поступил*|найден~|нашл*|"+
				"confirmed|received|successful|succeeded|completed|processed|verified|cleared|settled|found|"+
				"bestatigt|eingegangen|erhalten"),
		[]string{"payment*|charge|transaction* ... went|gone through"},
	),
}

// Completion are the general words with which a reply says something is
// done, whatever it is («Готово.», "All set"): held while a write of the
// turn is not confirmed.
var Completion = []string{
	"готово", "сделано", "выполнено", "исполнено", "завершено", "оформлено", "решено", "исправлено",
	"вопрос|проблема решен*", "все сделал*", "все выполнил*", "все оформил*", "успешно выполнен*|оформлен~|завершен~",
	"done", "completed", "finished", "all set", "taken care of", "sorted", "resolved", "fixed", "processed", "is|its|now|all complete",
	"erledigt", "fertig", "abgeschlossen", "✅|✔|☑|✓",
}

// negations, modals and questionParticles end an assertion in the clause
// they stand in (see Claims); prepositions before a match make it the
// object of a request; determiners stand between.
var (
	negations = []string{"не", "нет", "ни", "ничего", "никак", "никогда", "нельзя",
		"not", "no", "never", "nothing", "none", "neither", "nor", "without",
		"hasnt", "havent", "hadnt", "isnt", "wasnt", "werent", "arent", "didnt", "dont", "doesnt", "cannot", "cant", "wont",
		"couldnt", "shouldnt", "wouldnt", "nicht", "kein*", "nie"}
	modals = []string{"будет", "будут", "буду", "будем", "будете", "будешь", "бы", "если", "когда", "чтобы", "сможем", "сможете",
		"может", "можем", "можете", "могут", "могу", "должен", "должна", "должно", "должны", "нужно", "надо", "необходимо",
		"планируем", "планируется", "собираемся", "ожида*", "жд*",
		"will", "would", "should", "could", "can", "may", "might", "must", "shall", "once", "if", "when", "whenever", "until",
		"unless", "before", "be", "being", "going", "expect*", "hope*", "want*", "pending", "awaiting", "ill", "well", "youll", "itll", "theyll",
		"wird", "werden", "konnte", "kann", "sobald", "wenn", "falls"}
	questionParticles = []string{"ли", "whether", "ob"}
	requestWords      = []string{"заявк*", "запрос*", "заявлени*", "request*", "application*", "antrag*", "anfrage*"}
	prepositions      = []string{"на", "о", "об", "про", "для", "for", "of", "about", "fur", "uber"}
	determiners       = []string{"ваш*", "наш*", "мой", "мою", "этот", "эту", "the", "a", "an", "your", "our", "my", "this", "die", "der", "das", "ihre*", "eine*"}
	// reportedSpeech: phrases that report what the user said.
	reportedSpeech = []string{
		"вы ... пишете|написали|писали|сообщили|сообщаете|говорите|сказали|утверждаете|спрашиваете|спросили|указали|упомянули|считаете|думаете|уточняете",
		"пишете|написали|сообщили|сообщаете|говорите|утверждаете|спрашиваете|спросили|указали|упомянули",
		"по вашим словам", "с ваших слов",
		"you ... wrote|write|said|say|mentioned|asked|ask|told|claim|report|reported|think|believe|quoted",
		"according to you", "in your words", "your message", "your words",
		"sie schreiben|schrieben|sagten|fragen",
	}
)

// both is the patterns of a noun and a verb in either order ("возврат
// выполнен", «выполнен возврат»), a few words apart at most; a verb
// first is not read across a comma («Платёж подтверждён, возврат
// ожидает…» says nothing of a refund done).
func both(nouns, verbs string) []string {
	return []string{nouns + " ... " + verbs, verbs + " .. " + nouns}
}

func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
