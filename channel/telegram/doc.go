// Package telegram is the Telegram channel: it receives Bot API updates
// (by webhook or by long polling), keeps them in the durable channel inbox,
// turns them into chat.Inbound messages in the order each user sent them,
// hands them to the chat.Handler, and sends the replies back, with inline
// keyboards for buttons.
//
// It holds the webhook handler, the update decoder, a small Bot API client,
// the inbox processor and the mapping from Telegram messages to the user's
// words and labelled evidence. It knows nothing of models, tools or
// conversation memory: deciding what a message means, confirming actions
// and deduplicating turns are the handler's job. It holds no store backend
// either; it codes against store.ChannelInbox.
//
// # Bot API client
//
// The client is written here over net/http and encoding/json instead of
// using a Telegram SDK: the channel needs nine methods with small JSON
// bodies; the inbox keeps the update exactly as Telegram sent it, so no SDK
// type becomes part of the stored format; the webhook must answer 401 to a
// wrong secret (the handler of github.com/go-telegram/bot answers 200); and
// tests drive the channel with a loopback server that speaks the real JSON.
// Errors never contain the bot token: transport errors are reported without
// the request URL.
//
// # Delivery
//
// Every update is written to the inbox (store.ChannelInbox.Accept) before
// the webhook answers 200, or before a getUpdates offset moves past it, so
// an acknowledged update is never lost; a redelivered one is answered 200 and
// ignored. Item ids are "<chat id>:<update_id>"; the order key is
// "<chat id>:<user id>", the same split as the engine's conversation key
// (chat + user), so two people in one group chat do not wait for each other.
// The webhook never waits for a turn.
//
// A processor drains the inbox: one worker per order key, items strictly in
// acceptance order, a bounded number of turns at once. Each turn is a
// chat.Inbound whose MessageID is the item id, so the engine's message-id
// dedupe makes a second processing of the same item (a crash after the turn
// committed, or another instance draining the same inbox) a no-op: an
// Outbound marked Duplicate sends nothing. An item is marked done only after
// its reply was sent; on start the processor finishes what an earlier
// process accepted but did not finish. A reply whose send failed is kept in
// memory and resent without running the turn again. The one gap: if the
// process dies after the turn committed and before the reply went out, the
// redelivered turn is a duplicate and its reply is not sent again (the
// engine still remembers it in the conversation).
//
// # Forwards
//
// Telegram sends each forwarded message as its own update, and the user's
// comment as another one, just before (the usual "forward with comment") or
// just after the forwards. The processor joins them into one turn: a
// forward is held until ForwardHold has passed with no further forward; the
// run of forwards whose acceptance times are at most ForwardHold apart is
// one batch, together with the user's own message accepted at most
// CommentGrace before it or ForwardHold after it. To see a comment that is
// followed by forwards, a message with the user's words waits CommentGrace
// before its turn starts (a comment arriving after forwards ends their hold
// at once). A batch holds at most MaxBatch forwards. Batches are decided
// from the inbox items' kinds and acceptance times only, so a restarted or
// second instance forms the same ones. The forwards become
// Evidence{Kind: "forward"} (never instructions); the comment is the
// Inbound's Text.
//
// Before its turn runs, a batch of several updates is itself written to the
// inbox as one item ("batch:<first member id>:<hash of the member ids>", the
// members' updates as its payload); its id is the turn's MessageID. The
// members are marked done only after the batch's reply was sent, the batch
// last, so after a crash the same batch is processed (and deduplicated by
// the engine) instead of being formed again from different members.
//
// # Mapping
//
//   - text, and the caption of a photo or document: the user's words
//     (Inbound.Text); hidden links (text_link entities) are kept as
//     "text (url)"; the bot's own @username (learned with getMe) is dropped
//     ("/tasks@bot" is "/tasks").
//   - forward_origin of any kind (user, hidden_user, chat, channel):
//     Evidence{Kind: "forward"} whose Source names the origin and its date.
//   - reply_to_message (and its quote): Evidence{Kind: "quote"}.
//   - a text document (txt, md, csv, json) up to MaxEvidenceBytes: its
//     content as Evidence{Kind: "attachment"}, downloaded with getFile.
//   - any other file (photo, pdf, audio, video, ...): an attachment evidence
//     describing it (name, type, size) without its content.
//   - every file's evidence has Source "telegram-file:<file_id>" (see
//     FileSource and FileID), so a later action can attach the file; the
//     file id is valid for this bot only.
//   - voice: transcribed with Config.Transcribe into the user's words;
//     without Transcribe the user is told that voice is not enabled.
//   - edited_message: never processed. It is answered with a reply to the
//     edited message asking to send the correction as a new message. An
//     edit must not turn an earlier "no" into a confirmation, and the engine
//     confirms only on the user's own new words or a button.
//   - callback_query: answered at once (answerCallbackQuery), the keyboard
//     is removed from the message (editMessageReplyMarkup), and the button's
//     value goes to the handler as Inbound.Button. In a group, a button
//     pressed by anyone but the user the message answered does nothing and
//     says so; the reply is matched to its user through reply_to_message,
//     because group replies are sent as replies to the user's message.
//   - a user Identify does not know gets one polite refusal (at most one per
//     RefusalEvery) and nothing else.
//
// Replies are sent with parse_mode HTML, escaped (&, <, >), split on
// paragraph, line or word boundaries into messages of at most 4096
// characters; links are never cut, and draw no preview (a preview is
// fetched by Telegram the moment the message is sent, so a link an injected
// text made the model write would reach its host unclicked). Buttons
// become an inline keyboard on the
// last part, callback_data being the button's value (at most 64 bytes; a
// longer value is dropped from the keyboard and logged).
package telegram
