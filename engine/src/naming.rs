//! naming: AWS's rules for state machine and execution names, and generated names.
//! Must not: touch any state.

use super::error::{Error, NameReason};
use super::random::EntropySource;
use crate::limits::RESOURCE_NAME_CHARS_MAX;

/// Checks a state machine or execution name: 1..=80 characters, none of whitespace, brackets,
/// wildcards, `"#%\^|~`$&,;:/` or control characters (AWS's rules).
pub(crate) fn check_name(name: &str) -> Result<(), Error> {
    let refuse = |reason: NameReason| {
        Err(Error::InvalidName {
            name: name.to_string(),
            reason,
        })
    };
    let chars = name.chars().count();
    if chars == 0 || chars > RESOURCE_NAME_CHARS_MAX {
        return refuse(NameReason::Length {
            chars,
            chars_max: RESOURCE_NAME_CHARS_MAX,
        });
    }
    for c in name.chars() {
        let control = ('\u{0}'..='\u{1f}').contains(&c) || ('\u{7f}'..='\u{9f}').contains(&c);
        if c.is_whitespace() || control || "<>{}[]?*\"#%\\^|~`$&,;:/".contains(c) {
            return refuse(NameReason::ForbiddenCharacter { character: c });
        }
    }
    Ok(())
}

/// A start's execution name: `name` checked against AWS's rules, or a random UUID when the
/// caller gave none.
pub(crate) fn start_name(name: Option<&str>, entropy: &EntropySource) -> Result<String, Error> {
    match name {
        Some(name) => {
            check_name(name)?;
            Ok(name.to_string())
        }
        None => random_name(entropy),
    }
}

/// A random UUID (version 4 form) from the engine's random source; when the source fails, so
/// does the call (a fixed fallback would repeat names).
pub(crate) fn random_name(entropy: &EntropySource) -> Result<String, Error> {
    // From the names' pool: a system call per start was a measurable share of a start.
    let mut bytes = [0u8; 16];
    entropy.fill_name(&mut bytes, "a generated execution name")?;
    Ok(uuid_form(bytes))
}

/// A name in the same UUID form that is a function of `seed`: the first 16 bytes of its SHA-256.
/// The `.sync` start names an unnamed child after its task attempt with it, so that a start
/// repeated after a crash (its answer was lost) finds the child it started before.
pub(crate) fn derived_name(seed: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(seed.as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid_form(bytes)
}

/// 16 bytes as a version-4-form UUID (the version and variant digits set, as AWS's names look).
/// Written digit by digit: through `format!` this was a measurable share of an unnamed start.
fn uuid_form(bytes: [u8; 16]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [0u8; 32];
    for (index, byte) in bytes.iter().enumerate() {
        digits[2 * index] = HEX[usize::from(byte >> 4)];
        digits[2 * index + 1] = HEX[usize::from(byte & 0x0f)];
    }
    // 8-4-4-4-12, the third group's first digit `4`, the fourth's `a`.
    digits[12] = b'4';
    digits[16] = b'a';
    let mut name = String::with_capacity(36);
    for (index, digit) in digits.iter().enumerate() {
        if matches!(index, 8 | 12 | 16 | 20) {
            name.push('-');
        }
        name.push(char::from(*digit));
    }
    name
}

/// The execution name: the last `:`-separated part of its ARN.
pub(crate) fn execution_name(execution_arn: &str) -> &str {
    execution_arn
        .rsplit_once(':')
        .map_or(execution_arn, |(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_names_are_valid_uuids_fixed_by_their_seed() {
        let arn = "arn:aws:states:us-east-1:000000000000:execution:parent:p1";
        let name = derived_name(&format!("{arn}/5"));
        assert_eq!(
            name,
            derived_name(&format!("{arn}/5")),
            "the same attempt, the same name"
        );
        assert_ne!(
            name,
            derived_name(&format!("{arn}/6")),
            "another attempt, another name"
        );
        assert!(check_name(&name).is_ok());
        let parts: Vec<usize> = name.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12], "{name}");
        assert!(
            name.chars().all(|c| c == '-' || c.is_ascii_hexdigit()),
            "{name}"
        );
    }

    #[test]
    fn the_uuid_form_keeps_its_digits_and_sets_the_version_and_variant() {
        // Pinned: a `.sync` child's derived name must stay the same across versions, or a
        // start repeated after an upgrade would not find the child started before it.
        let bytes = [
            0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab,
            0xcd, 0xef,
        ];
        assert_eq!(uuid_form(bytes), "01234567-89ab-4def-a123-456789abcdef");
        assert_eq!(
            derived_name("arn:aws:states:us-east-1:000000000000:execution:parent:p1/5"),
            derived_name_through_format(
                "arn:aws:states:us-east-1:000000000000:execution:parent:p1/5"
            )
        );
    }

    /// The form as it was first written, through `format!`.
    fn derived_name_through_format(seed: &str) -> String {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(seed.as_bytes());
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&digest[..16]);
        let hex = format!("{:032x}", u128::from_be_bytes(bytes));
        format!(
            "{}-{}-4{}-a{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[13..16],
            &hex[17..20],
            &hex[20..32]
        )
    }

    #[test]
    fn names_follow_aws_rules() {
        assert!(check_name("order-1_A.b").is_ok());
        assert!(check_name(&"x".repeat(80)).is_ok());
        for bad in ["", "a b", "a/b", "a:b", "a*", "a\u{1}", "{x}"] {
            assert!(
                matches!(check_name(bad), Err(Error::InvalidName { .. })),
                "{bad:?}"
            );
        }
        assert!(check_name(&"x".repeat(81)).is_err());
        let os = EntropySource::new(std::sync::Arc::new(super::super::OsRandom), None);
        let generated = random_name(&os).expect("the OS generator works");
        assert_eq!(generated.len(), 36);
        assert!(check_name(&generated).is_ok());
        assert_ne!(generated, random_name(&os).expect("the OS generator works"));
        assert_eq!(execution_name("arn:aws:states:r:a:execution:m:n1"), "n1");
    }
}
