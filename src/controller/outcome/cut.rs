//! A message a tenant's registry fills, cut to what an Event or a log line may carry.

/// The longest Event message or reconcile log line written.
pub const MAX_MESSAGE: usize = 4096;

/// `message` within [`MAX_MESSAGE`] bytes, cut at a character boundary and marked.
pub fn cut_message(message: &str) -> String {
    if message.len() <= MAX_MESSAGE {
        return message.to_string();
    }
    const MARK: &str = " … (cut)";
    let mut end = MAX_MESSAGE - MARK.len();
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{MARK}", &message[..end])
}
